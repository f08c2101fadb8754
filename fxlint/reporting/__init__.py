"""What a report is made of beyond the findings: findings grouped by source line, the JSON schema.
"""

"""Graph rewrites (see ``fxlint.rewrite``); each is tied to a rule and verified."""

"""The jr2 Console: thin views over what the engine computes."""

"""The jr2 engine: the statechart interpreter (`engine.statechart`) and, on top of it, the authoring surface."""

"""The sample project the code_review workflow's test Effect runs on (a real Agent would change it)."""


def add(a: int, b: int) -> int:
    return a + b

"""The sample project of the code_review workflow: a calculator the coder changes."""


def sub(a: int, b: int) -> int:
    return a - b

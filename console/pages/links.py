"""Links that keep a page's other parameters: every view of a page (its sort, its overlay, its filters, its page
number) is a URL that can be bookmarked and shared."""

from __future__ import annotations

from django.http import QueryDict

__all__ = ["query_with"]


def query_with(params: QueryDict | None = None, **changes: str | int | None) -> str:
    """The query string of `params` (none: an empty one) with each change made: a value replaces the parameter's
    values, None drops it."""
    query = params.copy() if params is not None else QueryDict(mutable=True)
    for key, value in changes.items():
        query.pop(key, None)
        if value is not None:
            query[key] = value
    return query.urlencode()

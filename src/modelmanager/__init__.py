"""modelmanager: a model manager that is correct under concurrency."""

__all__: list[str] = []

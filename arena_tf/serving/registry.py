"""A small name -> class registry, filled by a decorator (runtimes, scenarios).

RUNTIMES = Registry("runtime", sort=True)

@RUNTIMES.register("tf")
class TensorFlowRuntime: ...

RUNTIMES.get("tf"), RUNTIMES.available()
"""


class Registry:
    """Classes by name; `get` of an unknown name is a ValueError listing the known ones."""

    def __init__(self, kind, sort=False):
        self.kind = kind
        self.sort = sort
        self.classes = {}

    def register(self, name):
        """Class decorator: file the class under `name` (also set as its `name` attribute)."""

        def add(cls):
            if name in self.classes:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            cls.name = name
            self.classes[name] = cls
            return cls

        return add

    def available(self):
        """The names, sorted or in registration order."""
        return sorted(self.classes) if self.sort else list(self.classes)

    def get(self, name):
        if name not in self.classes:
            raise ValueError(
                f"unknown {self.kind} {name!r}; expected one of {', '.join(self.available())}"
            )
        return self.classes[name]

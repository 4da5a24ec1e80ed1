"""Name -> attention class registry, filled by the `register` decorator."""

import inspect

import keras

_REGISTRY = {}


def register(name):
    """Class decorator: make an attention mechanism available under `name` and serializable."""

    def decorate(cls):
        if name in _REGISTRY:
            raise ValueError(f"attention mechanism {name!r} is registered twice")
        cls.mechanism = name
        _REGISTRY[name] = keras.saving.register_keras_serializable(package="arena_tf")(cls)
        return cls

    return decorate


def available():
    """Sorted names of the registered attention mechanisms."""
    return sorted(_REGISTRY)


def lookup(name):
    """The class registered under `name`; a ValueError listing the names otherwise."""
    if name not in _REGISTRY:
        raise ValueError(
            f"unknown attention mechanism {name!r}; expected one of {', '.join(available())}"
        )
    return _REGISTRY[name]


def accepted_params(cls):
    """Constructor parameters of a mechanism (its own and the base's), minus Keras layer kwargs."""
    names = []
    for klass in cls.__mro__:
        if klass is keras.layers.Layer:
            break
        if "__init__" in vars(klass):
            for param in inspect.signature(klass.__init__).parameters.values():
                if param.kind is param.KEYWORD_ONLY or param.kind is param.POSITIONAL_OR_KEYWORD:
                    if param.name != "self" and param.name not in names:
                        names.append(param.name)
    return names


def get(name, /, num_heads, head_dim, **params):
    """Build the attention layer `name`; unknown parameters raise a ValueError listing the
    accepted ones."""
    cls = lookup(name)
    accepted = accepted_params(cls)
    unknown = sorted(set(params) - set(accepted) - {"name", "dtype"})
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {', '.join(unknown)} for attention {name!r}; "
            f"accepted: {', '.join(p for p in accepted if p not in ('num_heads', 'head_dim'))}"
        )
    return cls(num_heads=num_heads, head_dim=head_dim, **params)

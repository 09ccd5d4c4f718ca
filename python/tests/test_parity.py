"""Training parity: 20 AdamW steps of each model of models.py, from the same
seed and data, give the same losses on porta as on the CPU (within 1e-4
relative), with no op falling back to the CPU.

A model that does not pass yet is a strict xfail naming the first op it
misses, so that an op landing turns it into a failure here until the mark
goes: `python python/tests/test_parity.py` prints what each model lacks.
"""
import math
import sys
import warnings

import pytest

import torch_porta

import models

# The first op each model still lacks on porta (None: it passes).
MISSING = {
    "mlp": None,
    "cnn": None,
    "lstm": None,
    "gru": None,
    "transformer": None,
}


def _train_on_porta(name):
    """(losses, fallbacks, error) of training model `name` on porta."""
    torch_porta.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            losses = models.train(name, "porta")
        except Exception as error:  # an op that neither runs nor falls back
            return None, torch_porta.metrics()["fallbacks"], error
    return losses, torch_porta.metrics()["fallbacks"], None


def _marked(name):
    reason = MISSING[name]
    if reason is None:
        return name
    return pytest.param(name, marks=pytest.mark.xfail(reason=reason, strict=True))


@pytest.mark.parametrize("name", [_marked(name) for name in models.MODELS])
def test_training_matches_cpu_without_fallbacks(name):
    cpu = models.train(name, "cpu")
    porta, fallbacks, error = _train_on_porta(name)
    if error is not None:
        raise error
    assert fallbacks == {}, f"ops that ran on the CPU: {sorted(fallbacks)}"
    for step, (got, expected) in enumerate(zip(porta, cpu)):
        assert math.isclose(got, expected, rel_tol=1e-4), \
            f"step {step}: loss {got} on porta, {expected} on the CPU"
    assert len(porta) == len(cpu)


def main():
    """Prints, per model, what MISSING should say."""
    for name in models.MODELS:
        losses, fallbacks, error = _train_on_porta(name)
        if error is not None:
            print(f"{name}: error {type(error).__name__}: {str(error).splitlines()[0]}")
        elif fallbacks:
            print(f"{name}: falls back: {', '.join(fallbacks)}")
        else:
            cpu = models.train(name, "cpu")
            worst = max(abs(a - b) / abs(b) for a, b in zip(losses, cpu))
            print(f"{name}: no fallback, worst relative loss difference {worst:.2e}")


if __name__ == "__main__":
    sys.exit(main())

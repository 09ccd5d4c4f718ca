"""Training parity: 20 AdamW steps of each model of models.py, from the same
seed and data, give the same losses on porta as on the CPU (within 1e-4
relative), with no op falling back to the CPU. Each model trains in eager
debug mode, in fused eager mode, and with its loss under
torch.compile(backend="porta").

A model that does not pass yet is a strict xfail naming the first op it
misses, so that an op landing turns it into a failure here until the mark
goes: `python python/tests/test_parity.py` prints what each model lacks.
"""
import contextlib
import math
import sys
import warnings

import pytest
import torch

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


MODES = ("eager", "fused", "compile")


@contextlib.contextmanager
def _running(name, mode):
    """Model `name` trains in `mode`: eager debug mode, fused eager mode, or
    its loss compiled by torch.compile(backend="porta")."""
    if mode == "fused":
        torch_porta.set_eager_mode("fused")
        try:
            yield
        finally:
            torch_porta.set_eager_mode("debug")
    elif mode == "compile":
        model = models.MODELS[name]
        had_own = "loss" in model.__dict__
        original = model.loss
        torch._dynamo.reset()
        # Dynamo leaves nn.LSTM/GRU to eager mode unless allowed.
        with torch._dynamo.config.patch(allow_rnn=True):
            model.loss = torch.compile(original, backend="porta")
            try:
                yield
            finally:
                if had_own:
                    model.loss = original
                else:
                    del model.loss
                torch._dynamo.reset()
    else:
        yield


def _train_on_porta(name, mode="eager"):
    """(losses, fallbacks, error) of training model `name` on porta."""
    torch_porta.reset_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with _running(name, mode):
                losses = models.train(name, "porta")
        except Exception as error:  # an op that neither runs nor falls back
            return None, torch_porta.metrics()["fallbacks"], error
    return losses, torch_porta.metrics()["fallbacks"], None


def _marked(name):
    reason = MISSING[name]
    if reason is None:
        return name
    return pytest.param(name, marks=pytest.mark.xfail(reason=reason, strict=True))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", [_marked(name) for name in models.MODELS])
def test_training_matches_cpu_without_fallbacks(name, mode):
    cpu = models.train(name, "cpu")
    porta, fallbacks, error = _train_on_porta(name, mode)
    if error is not None:
        raise error
    assert fallbacks == {}, f"ops that ran on the CPU: {sorted(fallbacks)}"
    for step, (got, expected) in enumerate(zip(porta, cpu)):
        assert math.isclose(got, expected, rel_tol=1e-4), \
            f"step {step}: loss {got} on porta, {expected} on the CPU"
    assert len(porta) == len(cpu)


def main():
    """Prints, per model and mode, what MISSING should say."""
    for name in models.MODELS:
        for mode in MODES:
            losses, fallbacks, error = _train_on_porta(name, mode)
            if error is not None:
                print(f"{name} ({mode}): error {type(error).__name__}: "
                      f"{str(error).splitlines()[0]}")
            elif fallbacks:
                print(f"{name} ({mode}): falls back: {', '.join(fallbacks)}")
            else:
                cpu = models.train(name, "cpu")
                worst = max(abs(a - b) / abs(b) for a, b in zip(losses, cpu))
                print(f"{name} ({mode}): no fallback, worst relative loss difference "
                      f"{worst:.2e}")


if __name__ == "__main__":
    sys.exit(main())

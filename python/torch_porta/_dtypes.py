"""torch dtypes <-> porta dtype codes (the porta_dtype enum of porta.h)."""
import torch

# In porta_dtype order: the index is the porta code.
_PORTA_ORDER = (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64,
    torch.complex64, torch.complex128,
)
_TO_PORTA = {dtype: code for code, dtype in enumerate(_PORTA_ORDER)}


def to_porta(dtype):
    """The porta code of a torch dtype; TypeError for dtypes porta lacks."""
    try:
        return _TO_PORTA[dtype]
    except KeyError:
        raise TypeError(f"porta does not support dtype {dtype}") from None


def to_torch(code):
    return _PORTA_ORDER[code]

"""Exporting a transformers causal language model as one decode step with its
KV cache as explicit inputs and outputs, for `porta generate`, `porta serve`'s
generate endpoints and porta_generate.h (docs/serve.md, "Generation").

    torch_porta.export_causal_lm(model, "lm.porta", max_length=128, max_batch=8)

The exported graph takes
    ids [B, 1] int64        the token each sequence feeds this step
    positions [B] int64     its position (the tokens the sequence holds so far)
    keys, values [L, B, H, S, D]   every layer's cache, S = max_length
and returns logits [B, 1, V] and the updated keys and values. Each batch row
is a sequence at its own position: row b's new key and value are written at
its position (a one-hot blend, so no scatter op is needed) and its query
sees cache entries 0..position only, so rows of different lengths decode
together and a row can be reused by a new sequence at any step.
"""
import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from .export import export


class _SlotLayer(CacheLayerMixin):
    """One layer's cache as tensors the graph takes and returns: update()
    writes the step's keys and values at each row's position."""

    is_compileable = True
    is_sliding = False

    def __init__(self, keys, values, positions):
        super().__init__()
        self.keys, self.values, self.positions = keys, values, positions
        self.is_initialized = True

    def lazy_initialization(self, key_states, value_states):
        pass

    def update(self, key_states, value_states, *args, **kwargs):
        steps = key_states.shape[-2]
        slots = torch.arange(self.keys.shape[-2], device=self.keys.device)
        where = self.positions[:, None] + torch.arange(steps, device=slots.device)
        onehot = (slots[None, None, :] == where[:, :, None]).to(key_states.dtype)  # [B, T, S]
        keep = (1 - onehot.sum(1))[:, None, :, None]
        scatter = onehot.transpose(1, 2)[:, None]  # [B, 1, S, T]
        self.keys = self.keys * keep + scatter @ key_states
        self.values = self.values * keep + scatter @ value_states
        return self.keys, self.values

    def get_mask_sizes(self, query_length):
        return self.keys.shape[-2], 0

    def get_seq_length(self):
        return 0

    def get_max_length(self):
        return self.keys.shape[-2]


class CausalLMWithCache(torch.nn.Module):
    """A transformers causal LM as (ids, positions, keys, values) ->
    (logits, keys, values); see the module's docstring."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, positions, keys, values):
        steps, length = ids.shape[1], keys.shape[-2]
        where = positions[:, None] + torch.arange(steps, device=ids.device)  # [B, T]
        visible = torch.arange(length, device=ids.device)[None, None, :] <= where[:, :, None]
        mask = torch.zeros(visible.shape, dtype=keys.dtype, device=ids.device)
        mask = mask.masked_fill(~visible, torch.finfo(keys.dtype).min)[:, None]
        layers = [_SlotLayer(keys[i], values[i], positions) for i in range(keys.shape[0])]
        out = self.model(input_ids=ids, position_ids=where, attention_mask=mask,
                         past_key_values=Cache(layers=layers), use_cache=True)
        return (out.logits, torch.stack([layer.keys for layer in layers]),
                torch.stack([layer.values for layer in layers]))


def cache_shape(model, max_length, batch=1):
    """[L, B, H, S, D] of the cache of a transformers causal LM."""
    config = model.config
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return (config.num_hidden_layers, batch, heads, max_length, head_dim)


def export_causal_lm(model, path, max_length, max_batch=8):
    """Exports `model` (a transformers causal LM in eval mode) as one decode
    step with a KV cache of `max_length` tokens per sequence and a batch of
    1 to `max_batch` sequences. Returns the ExportedProgram."""
    if max_length < 2 or max_batch < 1:
        raise ValueError(f"export_causal_lm: expected max_length >= 2 and max_batch >= 1, "
                         f"given {max_length} and {max_batch}")
    wrapper = CausalLMWithCache(model).eval()
    batch = 2 if max_batch >= 2 else 1
    dtype = next(model.parameters()).dtype
    keys = torch.zeros(cache_shape(model, max_length, batch), dtype=dtype)
    example = (torch.zeros(batch, 1, dtype=torch.long), torch.zeros(batch, dtype=torch.long),
               keys, keys.clone())
    dims = None
    if max_batch >= 2:
        b = torch.export.Dim("batch", min=1, max=max_batch)
        dims = ({0: b}, {0: b}, {1: b}, {1: b})
    with torch.no_grad():
        return export(wrapper, example, path, dynamic_shapes=dims)

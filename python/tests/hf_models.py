"""Small GPT-2-style and BERT-style models built from Hugging Face
transformers configs: random weights from a seed, eval mode, nothing
downloaded. Shared by the eager test, the export test and the ONNX Runtime
benchmark."""
import torch

VOCAB = 1000


def gpt2(attention="eager", layers=2, hidden=64, heads=4, seed=0):
    """A GPT-2 language model (token ids -> logits)."""
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(seed)
    config = GPT2Config(n_layer=layers, n_embd=hidden, n_head=heads, vocab_size=VOCAB,
                        n_positions=128, bos_token_id=0, eos_token_id=0, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False,
                        attn_implementation=attention)
    return GPT2LMHeadModel(config).eval()


def bert(attention="eager", layers=2, hidden=64, heads=4, seed=0):
    """A BERT encoder (token ids, attention mask -> hidden states, pooled)."""
    from transformers import BertConfig, BertModel
    torch.manual_seed(seed)
    config = BertConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                        intermediate_size=2 * hidden, vocab_size=VOCAB,
                        max_position_embeddings=128, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0, attn_implementation=attention)
    return BertModel(config).eval()


def token_ids(batch=2, length=16, seed=1):
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def padding_mask(batch=2, length=16):
    """1 for real tokens; the second sequence ends in 5 padding tokens."""
    mask = torch.ones(batch, length, dtype=torch.long)
    if batch > 1:
        mask[1, length - 5:] = 0
    return mask


class Logits(torch.nn.Module):
    """GPT-2 as a function of token ids alone (what export and ONNX take)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).logits


class Encoder(torch.nn.Module):
    """BERT as a function of token ids and the padding mask."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, mask):
        out = self.model(input_ids=ids, attention_mask=mask)
        return out.last_hidden_state, out.pooler_output


def llama(layers=2, hidden=64, heads=4, kv_heads=2, seed=0):
    """A Llama language model (rotary positions, grouped-query attention)."""
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(seed)
    config = LlamaConfig(num_hidden_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, intermediate_size=2 * hidden,
                         vocab_size=VOCAB, max_position_embeddings=128, bos_token_id=0,
                         eos_token_id=0, attn_implementation="eager")
    return LlamaForCausalLM(config).eval()

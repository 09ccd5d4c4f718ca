"""The models of the training-parity test: each builds itself from a seed,
makes its own batch and computes its loss, so the same program runs on the
CPU and on porta.

Dropout is 0 everywhere: the parity test compares exact training curves.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    """Regression with MSE and binary classification with BCEWithLogits."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                                 nn.Linear(32, 3))

    @staticmethod
    def batch(generator):
        x = torch.randn(16, 12, generator=generator)
        return x, (x[:, :2].sum(1, keepdim=True).tanh(), (x[:, 2:4] > 0).float())

    def loss(self, x, targets):
        regression, labels = targets
        out = self.net(x)
        return (F.mse_loss(out[:, :1], regression)
                + F.binary_cross_entropy_with_logits(out[:, 1:], labels))


class _ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class CNN(nn.Module):
    """A small ResNet: conv, batch norm, max/avg/adaptive pooling, residual
    adds; cross-entropy with label smoothing and an ignored class."""

    def __init__(self):
        super().__init__()
        # No bias before batch norm (as in ResNets): its true gradient is 0,
        # so AdamW would turn each device's rounding noise into steps of
        # random sign and the eval loss would compare noise, not porta.
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(), nn.MaxPool2d(2))
        self.block = _ResidualBlock(8)
        self.pool = nn.AvgPool2d(2)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))

    @staticmethod
    def batch(generator):
        labels = torch.randint(0, 5, (8,), generator=generator)
        labels[0] = -100  # ignored
        return torch.randn(8, 3, 16, 16, generator=generator), labels

    def forward(self, x):
        return self.head(self.pool(self.block(self.stem(x))))

    def loss(self, x, labels):
        return F.cross_entropy(self(x), labels, label_smoothing=0.1, ignore_index=-100)


class _Recurrent(nn.Module):
    """A sequence tagger with NLL loss over log-softmax."""
    cell = None

    def __init__(self):
        super().__init__()
        self.rnn = self.cell(6, 16, num_layers=2, batch_first=True)
        self.head = nn.Linear(16, 4)

    @staticmethod
    def batch(generator):
        return (torch.randn(4, 7, 6, generator=generator),
                torch.randint(0, 4, (4 * 7,), generator=generator))

    def loss(self, x, labels):
        out, _ = self.rnn(x)
        return F.nll_loss(F.log_softmax(self.head(out), -1).reshape(-1, 4), labels)


class LSTM(_Recurrent):
    cell = nn.LSTM


class GRU(_Recurrent):
    cell = nn.GRU


class Transformer(nn.Module):
    """A causal language model: embeddings, a TransformerEncoder layer (its
    MultiheadAttention, LayerNorm, GELU), one more attention block through
    F.scaled_dot_product_attention with is_causal, cross-entropy."""
    vocab, width, heads, length = 50, 32, 4, 10

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(self.vocab, self.width)
        self.position = nn.Embedding(self.length, self.width)
        layer = nn.TransformerEncoderLayer(self.width, self.heads, 64, dropout=0.0,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(self.width)
        self.qkv = nn.Linear(self.width, 3 * self.width)
        self.out = nn.Linear(self.width, self.vocab)

    @classmethod
    def batch(cls, generator):
        tokens = torch.randint(0, cls.vocab, (4, cls.length + 1), generator=generator)
        return tokens[:, :-1], tokens[:, 1:]

    def loss(self, tokens, targets):
        n, length = tokens.shape
        x = self.embed(tokens) + self.position(torch.arange(length, device=tokens.device))
        mask = nn.Transformer.generate_square_subsequent_mask(length, device=tokens.device)
        x = self.encoder(x, mask=mask, is_causal=True)
        q, k, v = self.qkv(self.norm(x)).view(n, length, 3, self.heads, -1).permute(
            2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + attended.transpose(1, 2).reshape(n, length, self.width)
        return F.cross_entropy(self.out(x).reshape(-1, self.vocab), targets.reshape(-1))


MODELS = {"mlp": MLP, "cnn": CNN, "lstm": LSTM, "gru": GRU, "transformer": Transformer}


def train(name, device, steps=20, seed=0):
    """Losses of `steps` AdamW steps of model `name` on `device`, from the
    same weights and batches whatever the device."""
    torch.manual_seed(seed)
    model = MODELS[name]()
    generator = torch.Generator().manual_seed(seed)
    batches = [model.batch(generator) for _ in range(steps)]
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for x, target in batches:
        x = x.to(device)
        target = tuple(t.to(device) for t in target) if isinstance(target, tuple) \
            else target.to(device)
        optimizer.zero_grad()
        loss = model.loss(x, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    if isinstance(model, CNN):  # batch norm in eval mode too: running statistics
        model.eval()
        with torch.no_grad():
            losses.append(model.loss(batches[0][0].to(device), batches[0][1].to(device)).item())
    return losses

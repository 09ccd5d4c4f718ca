"""A plain training script for test_train_supervisor.py, run by `porta
train`: nothing in it knows about checkpoints. Each step prints
`loss PID LOSS CRC` (CRC: the batch's targets, to compare batches), the end
`final PID LOSS` (the loss over the whole data set).

    python train_script.py MODEL EPOCHS

MODEL: "cnn" (the digits CNN of examples/train_digits_cnn.py, a DataLoader
shuffled by PyTorch's default generator, an evaluation DataLoader after
each epoch), "transformer" (the parity
model of models.py, a DataLoader shuffled by a seeded generator), "ddp"
(an MLP under DistributedDataParallel, every rank drawing the same
batches, so that any number of ranks computes the same steps).

The test's faults: TRAIN_TEST_KILL_AT=N kills the process (under MPI:
rank TRAIN_TEST_KILL_RANK) when it receives its Nth batch, once (the file
TRAIN_TEST_MARKER records that it happened); TRAIN_TEST_STOP_AT=N ends the
script there (exit status 0).
"""
import os
import signal
import sys
import zlib

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import torch_porta  # noqa: F401  (the "porta" device)

HERE = os.path.dirname(os.path.abspath(__file__))


def cnn():
    sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
    from train_digits_cnn import DigitsCNN, load_data
    (images, labels), (test_images, test_labels) = load_data()
    loader = DataLoader(TensorDataset(images[:192], labels[:192]), batch_size=32, shuffle=True)
    evaluation = DataLoader(TensorDataset(test_images[:64], test_labels[:64]), batch_size=32)
    return DigitsCNN(), loader, lambda model, x, y: F.cross_entropy(model(x), y), evaluation


def transformer():
    from models import Transformer
    model = Transformer()
    tokens = torch.randint(0, model.vocab, (48, model.length + 1),
                           generator=torch.Generator().manual_seed(1))
    loader = DataLoader(TensorDataset(tokens[:, :-1], tokens[:, 1:]), batch_size=8, shuffle=True,
                        generator=torch.Generator().manual_seed(2))
    return model, loader, lambda model, x, y: model.loss(x, y), None


def mlp():
    x = torch.randn(64, 6, generator=torch.Generator().manual_seed(1))
    y = x[:, :2].sum(1, keepdim=True).tanh()
    model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True,
                        generator=torch.Generator().manual_seed(2))
    return model, loader, lambda model, x, y: F.mse_loss(model(x), y), None


def main():
    name, epochs = sys.argv[1], int(sys.argv[2])
    rank = 0
    if name == "ddp":
        import torch.distributed as dist
        dist.init_process_group("porta")
        rank = dist.get_rank()
    torch.manual_seed(0)
    build = {"cnn": cnn, "transformer": transformer, "ddp": mlp}[name]
    model, loader, loss_of, evaluation = build()
    model.to("porta")
    if name == "ddp":
        model = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    kill_at = int(os.environ.get("TRAIN_TEST_KILL_AT", 0))
    kill_rank = int(os.environ.get("TRAIN_TEST_KILL_RANK", 0))
    stop_at = int(os.environ.get("TRAIN_TEST_STOP_AT", 0))
    marker = os.environ.get("TRAIN_TEST_MARKER", "")
    received = 0
    for _ in range(epochs):
        for x, y in loader:
            received += 1
            if received == stop_at:
                sys.exit(0)
            if received == kill_at and rank == kill_rank and not os.path.exists(marker):
                open(marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            x, y = x.to("porta"), y.to("porta")
            optimizer.zero_grad()
            loss = loss_of(model, x, y)
            loss.backward()
            optimizer.step()
            scheduler.step()
            if rank == 0:
                print(f"loss {os.getpid()} {loss.item()!r} "
                      f"{zlib.crc32(y.cpu().numpy().tobytes())}", flush=True)
        if evaluation is not None:  # a second DataLoader, not the one training resumes
            with torch.no_grad():
                losses = [loss_of(model, x.to("porta"), y.to("porta")).item()
                          for x, y in evaluation]
            print(f"evaluation {os.getpid()} {sum(losses) / len(losses)!r}", flush=True)
    if rank == 0:
        with torch.no_grad():
            data = loader.dataset.tensors
            final = loss_of(model, data[0].to("porta"), data[1].to("porta"))
        print(f"final {os.getpid()} {final.item()!r}", flush=True)


if __name__ == "__main__":
    main()

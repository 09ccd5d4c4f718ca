"""The in-process half of `porta train` (docs/train.md): switched on by the
supervisor's environment (PORTA_TRAIN_CHECKPOINT_DIR), it checkpoints an
unchanged training script and resumes it after a restart.

The script's optimizer steps are observed through PyTorch's global step
hook (as torch_porta.compare does); the objects to save are found when
first needed: the optimizer that steps (the one holding the most
parameters if there are several), the modules whose parameters it holds,
an LR scheduler of that optimizer, a GradScaler.

A checkpoint is taken, and a resumed run is restored, at one program
point: when the script asks its DataLoader for the next batch after the
step that made a checkpoint due. There the step's whole loop body (a
scheduler step, logging) is done and the next batch not yet drawn, so the
resumed run continues from exactly that point. The data position saved is
the DataLoader's: how many iterations (epochs) were started, how many
batches of the current one were drawn, and the random generators' states
when it began. Resumed, the iterations before are empty, the current one
draws the same order again and skips the batches used; then the model,
optimizer, scheduler, scaler and every generator are restored and the
loop goes on from step N+1 with the batches it would have drawn.

A device-loss error the script does not catch ends the process with exit
status DEVICE_LOST_EXIT, which the supervisor reads as "continue
elsewhere". Progress (step, last checkpoint) is written to the
supervisor's progress file after every step, so that a hang (no step for
a while) is told from slow work.
"""
import gc
import json
import os
import sys
import time

import torch

from .checkpoint import _world

DEVICE_LOST_EXIT = 75  # EX_TEMPFAIL: the work can continue, on another device

ENV_DIR = "PORTA_TRAIN_CHECKPOINT_DIR"
ENV_EVERY = "PORTA_TRAIN_CHECKPOINT_EVERY"
ENV_SECONDS = "PORTA_TRAIN_CHECKPOINT_SECONDS"
ENV_PROGRESS = "PORTA_TRAIN_PROGRESS"

_original_iter = torch.utils.data.DataLoader.__iter__


def _say(message):
    print(f"porta train: {message}", file=sys.stderr, flush=True)


def _generators(loader):
    """The generators that decide a DataLoader's order, each once, in a
    fixed order: its own, its sampler's, its batch sampler's sampler's."""
    found = []
    for owner in (loader, loader.sampler, getattr(loader.batch_sampler, "sampler", None)):
        generator = getattr(owner, "generator", None)
        if isinstance(generator, torch.Generator) and all(generator is not g for g in found):
            found.append(generator)
    return found


def _start_state(loader):
    """What decides an iteration's order, taken as it begins: PyTorch's CPU
    generator (a shuffling sampler without a generator seeds one from it)
    and the loader's own generators."""
    return {"torch": torch.get_rng_state(),
            "generators": [g.get_state() for g in _generators(loader)]}


def _set_start_state(loader, state):
    torch.set_rng_state(state["torch"])
    generators = _generators(loader)
    if len(generators) != len(state["generators"]):
        raise RuntimeError(f"porta train: the DataLoader has {len(generators)} generators, the "
                           f"checkpoint's had {len(state['generators'])}: not the same script")
    for generator, saved in zip(generators, state["generators"]):
        generator.set_state(saved)


class _TrackedIterator:
    """A DataLoader's iterator that tells the agent before each batch."""

    def __init__(self, agent, loader, index, iteration, inner, start, yielded=0,
                 restore=False):
        self.agent, self.loader, self.index, self.iteration = agent, loader, index, iteration
        self.inner, self.start, self.yielded, self.restore = inner, start, yielded, restore

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.inner)

    def __getattr__(self, name):  # what else code asks of the loader's own iterator
        return getattr(self.inner, name)

    def __next__(self):
        if self.restore:
            self.restore = False
            self.agent.restore()
        else:
            self.agent.before_batch(self)
        batch = next(self.inner)
        self.yielded += 1
        self.agent.last_loader = self.index
        return batch


def _skip(inner, count):
    """Moves a fresh iterator past `count` batches: without loading them
    when the loader has no worker processes (only the indices are drawn),
    else by fetching them (workers fetch ahead, in order)."""
    single = torch.utils.data.dataloader._SingleProcessDataLoaderIter
    for _ in range(count):
        try:
            if isinstance(inner, single):
                inner._next_index()
                inner._num_yielded += 1
            else:
                next(inner)
        except StopIteration:
            return


class Agent:
    def __init__(self, directory, every, seconds, progress):
        self.directory, self.every, self.seconds = directory, every, seconds
        self.progress_path = progress
        self.step = 0                # optimizer steps, those before a resume included
        self.checkpoint_step = None  # the step of the last checkpoint written or resumed
        self.due = False
        self.last_save = time.monotonic()
        self.loaders = []            # DataLoaders, in the order of their first iteration
        self.iterations = {}         # id(loader) -> iterations started
        self.objects = None          # (model, optimizer, scheduler, scaler), once found
        self.resume = self._pending_resume()
        self.warned_no_loader = False
        self.last_loader = None      # the loader that gave the latest batch
        self.training_loader = None  # the loader whose batch the latest step used

    # ---- what is saved ----

    def _pending_resume(self):
        from ._checkpoint_files import CheckpointError, decode, read_data, read_manifest
        if not os.path.exists(os.path.join(self.directory, "manifest.json")):
            return None
        try:
            manifest = read_manifest(self.directory)
            tensors = {}
            for name, record in manifest["files"].items():
                if name.startswith("state-"):
                    tensors.update(read_data(self.directory, name, record))
            position = decode(manifest.get("data"), tensors)
        except CheckpointError as error:
            raise SystemExit(f"porta train: cannot resume: {error}")
        if not isinstance(position, dict) or "loader" not in position:
            raise SystemExit(f"porta train: cannot resume: {self.directory} holds no DataLoader "
                             f"position (not a checkpoint written by porta train)")
        return {"step": manifest["step"], "position": position}

    def _find_objects(self):
        """The optimizer (outer ones only: a ZeroRedundancyOptimizer's inner
        optimizer is its own), the modules holding its parameters, its LR
        scheduler and a GradScaler, from the live objects."""
        # by type, not isinstance: isinstance asks an object's __class__,
        # which some module-level proxies answer with a deprecation warning
        objects = gc.get_objects()
        optimizers = [o for o in objects if issubclass(type(o), torch.optim.Optimizer)]
        inner = {id(getattr(o, "optim", None)) for o in optimizers}
        optimizers = [o for o in optimizers if id(o) not in inner]
        if not optimizers:
            raise RuntimeError("porta train: the script has no torch.optim optimizer to "
                               "checkpoint")
        optimizer = max(optimizers, key=lambda o: sum(len(g["params"]) for g in o.param_groups))
        order = {id(p): i for i, p in enumerate(
            p for group in optimizer.param_groups for p in group["params"])}
        holders = [o for o in objects if issubclass(type(o), torch.nn.Module)
                   and any(id(p) in order for p in o.parameters())]
        inside = {id(child) for m in holders for child in m.modules() if child is not m}
        roots = sorted((m for m in holders if id(m) not in inside),
                       key=lambda m: min(order.get(id(p), len(order)) for p in m.parameters()))
        if not roots:
            raise RuntimeError("porta train: no module holds the optimizer's parameters")
        model = roots[0] if len(roots) == 1 else \
            torch.nn.ModuleDict({str(i): m for i, m in enumerate(roots)})
        schedulers = [o for o in objects
                      if issubclass(type(o), torch.optim.lr_scheduler.LRScheduler)
                      and getattr(o, "optimizer", None) is optimizer]
        scalers = [o for o in objects if issubclass(type(o), torch.amp.GradScaler)]
        self.objects = (model, optimizer, schedulers[0] if schedulers else None,
                        scalers[0] if scalers else None)
        return self.objects

    def _rng_sources(self):
        return ("torch", "porta", "python") + (("numpy",) if "numpy" in sys.modules else ())

    def save(self, tracked):
        from . import checkpoint
        model, optimizer, scheduler, scaler = self.objects or self._find_objects()
        position = {"loader": tracked.index, "iteration": tracked.iteration,
                    "yielded": tracked.yielded, "start": tracked.start}
        started = time.monotonic()
        checkpoint.save(self.directory, model=model, optimizer=optimizer, scheduler=scheduler,
                        scaler=scaler, step=self.step, data=position, rng=self._rng_sources())
        self.checkpoint_step = self.step
        self.last_save = time.monotonic()
        if _world()[0] == 0:
            _say(f"checkpoint of step {self.step} written to {self.directory} "
                 f"({self.last_save - started:.2f} s)")
        self.write_progress()

    def restore(self):
        from . import checkpoint
        model, optimizer, scheduler, scaler = self.objects or self._find_objects()
        state = checkpoint.load(self.directory, model=model, optimizer=optimizer,
                                scheduler=scheduler, scaler=scaler)
        self.step = self.checkpoint_step = state["step"]
        self.resume = None
        self.last_save = time.monotonic()
        if _world()[0] == 0:
            device = next(iter(model.parameters())).device
            _say(f"resumed from the checkpoint of step {self.step} in {self.directory} on "
                 f"{device}")
        self.write_progress()

    # ---- the hooks ----

    def iterate(self, loader):
        if id(loader) not in self.iterations:
            self.loaders.append(loader)
            self.iterations[id(loader)] = 0
        index, iteration = self.loaders.index(loader), self.iterations[id(loader)]
        self.iterations[id(loader)] += 1
        position = self.resume["position"] if self.resume else None
        if position is None or index != position["loader"]:
            start = _start_state(loader)
            return _TrackedIterator(self, loader, index, iteration, _original_iter(loader),
                                    start)
        if iteration < position["iteration"]:
            return iter(())  # an epoch done before the checkpoint
        _set_start_state(loader, position["start"])
        inner = _original_iter(loader)
        _skip(inner, position["yielded"])
        return _TrackedIterator(self, loader, index, iteration, inner, position["start"],
                                position["yielded"], restore=True)

    def before_batch(self, tracked):
        # checkpoints are taken only between the training loop's batches: an
        # evaluation loader's position is not where training resumes, and
        # it may run on one rank only
        if self.resume is not None or tracked.index != self.training_loader:
            return
        due = self.due or (self.seconds > 0 and self.step > (self.checkpoint_step or 0) and
                           time.monotonic() - self.last_save >= self.seconds)
        rank, size = _world()
        if self.seconds > 0 and size > 1:  # the ranks' clocks differ: rank 0 decides
            import torch.distributed as dist
            decision = [due]
            dist.broadcast_object_list(decision, src=0)
            due = decision[0]
        if due:
            self.due = False
            self.save(tracked)

    def step_done(self, optimizer, args, kwargs):
        if self.objects is None:
            self._find_objects()
        if optimizer is not self.objects[1]:
            return
        self.step += 1
        self.training_loader = self.last_loader
        if self.every > 0 and self.step % self.every == 0:
            self.due = True
        if not self.loaders and not self.warned_no_loader:
            self.warned_no_loader = True
            _say("the script draws no batches from a torch DataLoader, where checkpoints are "
                 "taken: it runs unsupervised by checkpoints (a restart starts it again)")
        self.write_progress()

    def write_progress(self):
        if not self.progress_path or _world()[0] != 0:
            return
        temporary = f"{self.progress_path}.{os.getpid()}.tmp"
        with open(temporary, "w") as f:
            json.dump({"step": self.step, "checkpoint": self.checkpoint_step,
                       "pid": os.getpid()}, f)
        os.replace(temporary, self.progress_path)

    def excepthook(self, kind, value, traceback, previous):
        previous(kind, value, traceback)
        from ._device_lost import is_device_lost
        if is_device_lost(value):
            last = "none" if self.checkpoint_step is None else f"step {self.checkpoint_step}"
            _say(f"the device was lost ({value}); exit status {DEVICE_LOST_EXIT} asks for a "
                 f"restart from the last checkpoint ({last}) elsewhere")
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(DEVICE_LOST_EXIT)


def _number(name, kind):
    text = os.environ.get(name, "0") or "0"
    try:
        value = kind(text)
    except ValueError:
        raise SystemExit(f"porta train: {name}: expected a number, got {text!r}") from None
    if value < 0:
        raise SystemExit(f"porta train: {name}: expected a number >= 0, got {text!r}")
    return value


def install():
    """Starts the agent (torch_porta imports this module only when the
    supervisor set ENV_DIR)."""
    directory = os.environ[ENV_DIR]
    from torch.optim.optimizer import register_optimizer_step_post_hook
    agent = Agent(directory, _number(ENV_EVERY, int), _number(ENV_SECONDS, float),
                  os.environ.get(ENV_PROGRESS))
    torch.utils.data.DataLoader.__iter__ = lambda loader: agent.iterate(loader)
    register_optimizer_step_post_hook(agent.step_done)
    previous = sys.excepthook
    sys.excepthook = lambda kind, value, traceback: agent.excepthook(kind, value, traceback,
                                                                     previous)
    agent.write_progress()
    return agent

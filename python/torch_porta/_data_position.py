"""ResumableSampler: a sampler that knows where it is in its epoch, so that
a checkpoint can record the position and a resumed run draws the same
batches (docs/checkpoint.md).

PyTorch's RandomSampler draws its permutation from its generator when an
epoch's iteration starts, and nothing outside the DataLoader's iterator
knows how many indices have been taken since. This sampler keeps both: the
generator's state at the start of the epoch and the count of indices
yielded. Restored, its next iteration draws the same permutation again (so
the generator also ends where it did) and skips what was already used.
"""
import torch


class ResumableSampler(torch.utils.data.Sampler):
    """Indices 0..length-1, shuffled by `generator` (a torch.Generator on
    the CPU; a new one seeded by `seed` if None) when `shuffle`, else in
    order. With DataLoader(..., sampler=this, num_workers=0) the indices
    taken are exactly the batches the loop has received (batch_size each);
    worker processes fetch ahead, so the position counts batches fetched,
    not used."""

    def __init__(self, length, shuffle=True, generator=None, seed=0):
        if not isinstance(length, int):
            length = len(length)
        if length < 0:
            raise ValueError(f"ResumableSampler: expected a length >= 0, got {length}")
        self.length, self.shuffle = length, shuffle
        self.generator = generator if generator is not None \
            else torch.Generator().manual_seed(seed)
        self.epoch = 0          # epochs started before the current one
        self.yielded = 0        # indices of the current epoch taken so far
        self._epoch_start = None  # the generator's state when the epoch began
        self._resume = False

    def __len__(self):
        return self.length

    def __iter__(self):
        if self._resume:
            self._resume = False
            self.generator.set_state(self._epoch_start)
            skip = self.yielded
        else:
            if self._epoch_start is not None:
                self.epoch += 1
            self._epoch_start = self.generator.get_state()
            skip = 0
        order = (torch.randperm(self.length, generator=self.generator) if self.shuffle
                 else torch.arange(self.length)).tolist()
        self.yielded = skip
        for index in order[skip:]:
            self.yielded += 1
            yield index

    def state_dict(self):
        """The position: which epoch, how many of its indices were taken,
        and the generator's state when it began (a uint8 tensor)."""
        start = self._epoch_start if self._epoch_start is not None \
            else self.generator.get_state()
        return {"length": self.length, "shuffle": self.shuffle, "epoch": self.epoch,
                "yielded": self.yielded, "epoch_start": start,
                "started": self._epoch_start is not None}

    def check_state_dict(self, state):
        """Raises ValueError if `state` is not a position of this sampler
        (checkpoint.load asks before it changes anything)."""
        if state.get("length") != self.length or state.get("shuffle") != self.shuffle:
            raise ValueError(
                f"ResumableSampler: the saved position is of {state.get('length')} indices "
                f"(shuffle={state.get('shuffle')}), this sampler has {self.length} "
                f"(shuffle={self.shuffle})")

    def load_state_dict(self, state):
        self.check_state_dict(state)
        self.epoch, self.yielded = state["epoch"], state["yielded"]
        if state["started"]:
            self._epoch_start = state["epoch_start"]
            if self.yielded >= self.length:
                # the epoch was used up: the next iteration starts a new one
                # from where the generator was after this one's permutation
                self.generator.set_state(self._epoch_start)
                if self.shuffle:
                    torch.randperm(self.length, generator=self.generator)
                self._resume = False
            else:
                self._resume = True
        else:
            self._epoch_start = None
            self.generator.set_state(state["epoch_start"])
            self._resume = False

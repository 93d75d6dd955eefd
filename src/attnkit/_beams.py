"""The state of :func:`attnkit.decoding.beam_search`: its live hypotheses (:class:`Beams`), each step's candidates
and the hypotheses it finishes (layer 4; torch alone). Split from :mod:`attnkit.decoding` so that the search reads
as its four steps: propose candidates, finish those ending in ``<eos>``, keep the best others live, and at
``max_len`` return the live ones unfinished.

Shape glossary (as in :mod:`attnkit.decoding`):
    B  sources   k  beam size   N  decoder rows = B·k   V  target vocabulary   T  steps   W  the model's weight dims
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def normalise(log_probs: torch.Tensor, lengths: torch.Tensor, length_penalty: float) -> torch.Tensor:
    """The score hypotheses are ranked by: ``log_probs / lengths ** length_penalty`` (lengths counted from 1)."""
    return log_probs / lengths.to(log_probs.dtype).clamp(min=1) ** length_penalty


@dataclass
class Hypothesis:
    score: float
    log_prob: float
    tokens: torch.Tensor  # [length]
    finished: bool
    weights: torch.Tensor | None  # [length, *W]


def hypothesis(
    log_prob: torch.Tensor, tokens: torch.Tensor, finished: bool, weights: torch.Tensor | None, length_penalty: float
) -> Hypothesis:
    """A hypothesis scored with the very float32 operations :func:`~attnkit.decoding.greedy` uses (so beam 1 equals
    greedy)."""
    length = torch.tensor(len(tokens), device=log_prob.device)
    score = normalise(log_prob, length, length_penalty)
    return Hypothesis(float(score), float(log_prob), tokens, finished, weights)


@dataclass
class Candidates:
    """A step's ``2k`` best extensions of each source's live hypotheses, best first."""

    scores: torch.Tensor  # [B, 2k] raw log-probabilities
    tokens: torch.Tensor  # [B, 2k]
    rows: torch.Tensor  # [B, 2k] the decoder row each extends
    ends: torch.Tensor  # [B, 2k] bool: the token is <eos>


@dataclass
class Beams:
    """The ``k`` live hypotheses of each source, in rows ``b·k .. b·k + k - 1``."""

    k: int
    tokens: torch.Tensor  # [N] the token each row feeds next
    scores: torch.Tensor  # [B, k] raw log-probabilities
    history: torch.Tensor  # [N, T] the tokens so far, <pad> after
    weights: torch.Tensor | None = None  # [N, steps, *W] each step's weights, when asked

    @classmethod
    def start(cls, batch: int, k: int, max_len: int, *, bos_id: int, pad_id: int, device: torch.device) -> Beams:
        """Every row at ``<bos>``; all beams start identical, so only each source's first is expanded at step 0."""
        scores = torch.full((batch, k), float("-inf"), device=device)  # [B, k]
        scores[:, 0] = 0.0
        tokens = torch.full((batch * k,), bos_id, dtype=torch.long, device=device)  # [N]
        return cls(k, tokens, scores, torch.full((batch * k, max_len), pad_id, dtype=torch.long, device=device))

    def add_weights(self, weights: torch.Tensor) -> None:
        """Append a step's weights ``[N, *W]``."""
        step = weights[:, None]  # [N, 1, *W]
        self.weights = step if self.weights is None else torch.cat([self.weights, step], 1)

    def candidates(self, step_log_probs: torch.Tensor, eos_id: int) -> Candidates:
        """Every live row proposes its ``2k`` best tokens (``step_log_probs [N, V]``); the ``2k`` best of a
        source's proposals are its candidates."""
        batch, k = self.scores.shape
        per_beam = min(2 * k, step_log_probs.shape[-1])
        top_log_probs, top_tokens = step_log_probs.topk(per_beam, dim=-1)  # [N, per_beam]
        proposals = (self.scores.view(batch * k, 1) + top_log_probs).view(batch, k * per_beam)  # [B, k·per_beam]
        scores, index = proposals.topk(2 * k, dim=-1)  # [B, 2k], best first
        tokens = top_tokens.view(batch, k * per_beam).gather(1, index)  # [B, 2k]
        rows = torch.arange(batch, device=scores.device)[:, None] * k + index // per_beam  # [B, 2k]
        return Candidates(scores, tokens, rows, tokens == eos_id)

    def finish(
        self, candidates: Candidates, t: int, length_penalty: float, skip: list[bool]
    ) -> list[tuple[int, Hypothesis]]:
        """``(source, hypothesis)`` for the candidates among their source's best ``k`` that end in ``<eos>`` with a
        finite score (``t + 1`` tokens each), except for the sources ``skip`` marks."""
        first_ranks = torch.arange(2 * self.k, device=candidates.ends.device) < self.k  # [2k]
        finishing = candidates.ends & first_ranks & torch.isfinite(candidates.scores)
        found = []
        for b, j in finishing.nonzero().tolist():
            if skip[b]:
                continue
            row = int(candidates.rows[b, j])
            tokens = torch.cat([self.history[row, :t], candidates.tokens[b, j : j + 1]])
            weights = None if self.weights is None else self.weights[row].clone()
            found.append((b, hypothesis(candidates.scores[b, j], tokens, True, weights, length_penalty)))
        return found

    def advance(self, candidates: Candidates, t: int) -> torch.Tensor:
        """Keep each source's ``k`` best candidates that do not end in ``<eos>`` (there are always ``k`` among the
        ``2k``) live, their token at step ``t``; returns the row each live row continues ``[N]``."""
        order = torch.arange(2 * self.k, device=candidates.ends.device) + candidates.ends.long() * 2 * self.k
        keep = order.topk(self.k, dim=-1, largest=False).indices  # [B, k]; <eos> ones sort last
        indices = candidates.rows.gather(1, keep).view(-1)  # [N]
        self.tokens = candidates.tokens.gather(1, keep).view(-1)  # [N]
        self.scores = candidates.scores.gather(1, keep)  # [B, k]
        self.history = self.history[indices]
        self.history[:, t] = self.tokens
        if self.weights is not None:
            self.weights = self.weights[indices]
        return indices

    def unfinished(self, b: int, count: int, steps: int, length_penalty: float) -> list[Hypothesis]:
        """Source ``b``'s ``count`` best live hypotheses, cut after ``steps`` tokens, unfinished."""
        found = []
        for i in range(count):
            row = b * self.k + i
            weights = None if self.weights is None else self.weights[row].clone()
            tokens = self.history[row, :steps].clone()
            found.append(hypothesis(self.scores[b, i], tokens, False, weights, length_penalty))
        return found

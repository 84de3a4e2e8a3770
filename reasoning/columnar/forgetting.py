"""Forgetting after step 3 of Algorithm 1 (002 §6; 000 §7): bounded S_τ by retention."""
from __future__ import annotations

from reasoning.columnar.layout import BOOL, INT, OBJ, vcol
from reasoning.columnar.unify import literal_vars


def drop_redundant(eng, fresh: dict) -> None:
    """Non-definite derivations of a ground answer that just became definite are
    dropped (bounded state; 3(b) refutes through the definite one)."""
    B = eng.B
    by_pred: dict = {}
    tails: dict = {}  # (pred, n) -> the family whose tail saw all its fresh heads, or None
    for (k, P), f in fresh.items():
        head = eng.templates[k].head
        if not literal_vars(head) <= P:
            continue
        n = len(head.args)
        by_pred.setdefault((head.pred, n), []).append((k, f))
        done = eng.tail_done(k, eng.S[k].get(P))
        fam = done.family if done is not None else None
        tails[(head.pred, n)] = fam if tails.get((head.pred, n), fam) is fam else None
    for (pred, n), fs in by_pred.items():
        H = None  # (built when a partition is not one its family's tail did)
        rcols = [f"_rla{p}" for p in range(n)] + ["_rlt", "_rnd"]
        for k2 in eng.by_head.get(pred, ()):
            head2 = eng.templates[k2].head
            if not any(literal_vars(head2) <= P2 for P2 in eng.S[k2]):
                continue
            lkeys = None
            for P2 in list(eng.S[k2]):
                if not literal_vars(head2) <= P2:
                    continue
                A = eng.S[k2][P2]
                done = eng.tail_done(k2, A)
                if done is not None and tails[(pred, n)] is done.family:
                    continue  # (step1_family's tail dropped them: the same heads)
                if H is None:
                    H = B.unique(B.concat([B.select(f, head_items(eng, k, prefix="_r") + [
                        B.alias(B.lit(True, BOOL), "_rnd")]) for k, f in fs]))
                if lkeys is None:
                    full = eng.layouts[k2].full_mask
                    lkeys = [B.col(vcol(x)) if isvar else B.lit(x, OBJ)
                             for isvar, x in head2.args]
                    lkeys += [eng._texpr(head2), B.col("ev") != B.lit(full, INT)]
                eng.S[k2][P2] = B.materialize(
                    eng._sel(B.join(A, H, lkeys, rcols, how="anti"), B.columns(A)))


def forget_definite(eng, tau: int) -> None:
    """Bounded state (000 §7): a definite answer is emitted once, then dropped as soon as
    no negated hypothesis created later can refer to it."""
    B = eng.B
    for k, tp in enumerate(eng.templates):
        pred = tp.head.pred
        for P, A in list(eng.S[k].items()):
            done = eng.tail_done(k, A)
            mine = done is not None
            frames = eng.fam_tables[done.family.tids][1] if mine else None
            if B.is_empty(A):
                del eng.S[k][P]
                if mine:
                    frames.pop(k, None)
                continue
            if mine and done.fresh is None:
                continue  # (step1_family's tail: no definite row, none new at τ)
            if mine:  # its rows less the definite ones (split off the family's table)
                A = done.after
            else:
                full = B.col("ev") == B.lit(eng.layouts[k].full_mask, INT)
                if pred not in eng.retention:
                    drop = full
                else:
                    lag = eng.retention[pred]
                    if lag is None or (tp.head.tvar is not None and tp.head.tvar not in P):
                        continue
                    ht = eng._texpr(tp.head)
                    drop = full & (ht + B.lit(lag, INT) <= B.lit(tau, INT))
                A = B.materialize(B.filter(A, ~drop))
            if B.is_empty(A):
                del eng.S[k][P]
                if mine:
                    frames.pop(k, None)
            else:
                eng.S[k][P] = A
                if mine:  # (the family's table after forgetting holds the same rows)
                    frames[k] = A


def head_items(eng, k: int, prefix: str = "") -> list:
    """Template k's head instantiated by its rows: <prefix>la<i> (arguments), <prefix>lt."""
    B = eng.B
    head = eng.templates[k].head
    items = [B.alias(B.col(vcol(x)) if isvar else B.lit(x, OBJ), f"{prefix}la{pos}")
             for pos, (isvar, x) in enumerate(head.args)]
    items.append(B.alias(eng._texpr(head), f"{prefix}lt"))
    return items

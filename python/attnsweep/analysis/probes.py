"""analyze.py's probe_trialNNNNNN.png: the probes of `attnsweep probe`
(/trials/NNNNNN/probe), read as they are stored, none recomputed."""
import numpy as np

from .common import text
from .plots import new_figure, save, suptitle

# ----------------------------------------------------------------------------------
# The probes of `attnsweep probe` (/trials/NNNNNN/probe): read as they are stored, none
# recomputed.

def heatmap(ax, a, labels, title):
    im = ax.imshow(a, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            ax.text(j, i, f"{a[i, j]:.2f}", ha="center", va="center", fontsize=6,
                    color="w" if a[i, j] < 0.6 else "k")
    ax.set_title(title, fontsize=9)
    return im


def plot_probe_trial(g, trial, title, outdir, written):
    """probe_trialNNNNNN.png (CKA, noise, the transform's changes) and
    probe_attention_trialNNNNNN.png (the attention maps); their records."""
    p = g["probe"]
    records = {}
    cka_l = p["cka_layers"][()]
    cka_h = p["cka_heads"][()] if "cka_heads" in p else None
    L = cka_l.shape[0] - 1
    tr = p["transform"] if "transform" in p else None
    ncols = 2 + (L if cka_h is not None else 0) + (1 if tr is not None else 0)
    fig, axes = new_figure(1, ncols, 3.6, 4.4)
    im = heatmap(axes[0, 0], cka_l, ["emb"] + [f"L{l}" for l in range(L)], "CKA between layers")
    record = {"kind": "probe", "trial": trial, "examples": int(p.attrs["examples"]),
              "cka_layers": cka_l, "cka_heads": cka_h}
    col = 1
    if cka_h is not None:
        H = cka_h.shape[1]
        for l in range(L):
            heatmap(axes[0, col], cka_h[l], [f"h{h}" for h in range(H)], f"CKA between heads, layer {l}")
            col += 1
    noise = p["noise"][()]
    ax = axes[0, col]
    ax.plot(noise["sigma"], noise["val_accuracy"], "o-")
    ax.set_xlabel("input noise sigma")
    ax.set_ylabel("validation accuracy")
    ax.set_title("accuracy under Gaussian input noise", fontsize=9)
    ax.grid(alpha=0.3)
    record["noise"] = {"sigma": noise["sigma"], "val_accuracy": noise["val_accuracy"],
                       "val_loss": noise["val_loss"]}
    col += 1
    if tr is not None:
        tab = tr["invariants"][()]
        names = [f"{text(n)}" + ("" if l < 0 else f" L{l}") for n, l in zip(tab["name"], tab["layer"])]
        change = np.where(np.isfinite(tab["change"]), tab["change"], np.nan) * 100
        ax = axes[0, col]
        y = np.arange(len(names))
        ax.barh(y, change, color=["C2" if s else "C3" for s in tab["stays"]])
        tol = 100 * float(tr.attrs["tolerance"])
        ax.axvspan(-tol, tol, color="0.85", zorder=0)
        if "control" in tr:
            ax.plot(tab["control_change"] * 100, y, "k|", markersize=8, label="seed + 1 (no transform)")
            ax.legend(fontsize=7, loc="lower right")
        ax.set_yticks(y, names, fontsize=6)
        ax.invert_yaxis()
        ax.set_xlabel("relative change (%)")
        ax.set_title(f"{text(tr.attrs['kind'])} transform: stays (green) within ±{tol:g} %", fontsize=9)
        record["transform"] = {"kind": text(tr.attrs["kind"]), "tolerance": float(tr.attrs["tolerance"]),
                               "names": names, "original": tab["original"], "transformed": tab["transformed"],
                               "change": tab["change"], "stays": tab["stays"],
                               "control_change": tab["control_change"]}
    suptitle(fig, f"{title}: trial {trial}, probes on the validation split ({record['examples']} examples "
                  f"for the CKA)", fontsize=10)
    save(fig, outdir, f"probe_trial{trial:06d}.png", written, colourbar=(im, "linear CKA"))
    records[f"probe_trial{trial:06d}.png"] = record
    if "attention" in p:
        maps = p["attention"][()]
        E, L, H = maps.shape[:3]
        fig, axes = new_figure(E, L * H, 1.7, 1.7)
        for e in range(E):
            for l in range(L):
                for h in range(H):
                    ax = axes[e, l * H + h]
                    ax.imshow(maps[e, l, h], vmin=0, cmap="magma")
                    ax.set_xticks([])
                    ax.set_yticks([])
                    if e == 0:
                        ax.set_title(f"L{l} h{h}", fontsize=8)
                if l == 0:
                    axes[e, 0].set_ylabel(f"val example {e}", fontsize=8)
        suptitle(fig, f"{title}: trial {trial}, attention maps (row: the attending token, [CLS] or "
                      f"the first token at 0)", fontsize=9)
        name = f"probe_attention_trial{trial:06d}.png"
        save(fig, outdir, name, written)
        records[name] = {"kind": "probe_attention", "trial": trial, "examples": list(range(E)),
                         "shape": list(maps.shape)}
    return records


def plot_probes(rs, df, title, outdir, written):
    records = {}
    for trial in sorted(int(t) for t in df["trial"]):
        g = rs.trial(trial)
        if g is not None and "probe" in g:
            records.update(plot_probe_trial(g, trial, title, outdir, written))
    return records

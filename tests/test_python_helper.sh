#!/usr/bin/env bash
# Tests of the Python helper for trial programs (python/attnsweep/trial.py) and of a
# continued program trial's curve:
#   1. report(): what it refuses (a step that is no integer ≥ 0, a text, a tensor of several
#      numbers); should_stop() true after a SIGTERM; report()'s lines read by the real runner: a program run by `attnsweep run`
#      under mpirun imports the helper from the PYTHONPATH attnsweep gives it (the helper's
#      directory first, the caller's PYTHONPATH after it); its values are the trial's curve
#      (NaN as null), n_params its /summary column, its own key kept in the metrics file;
#   2. save_attention(): an nn.MultiheadAttention, a pre-LN nn.TransformerEncoder (norm1
#      folded), nanoGPT-style (c_attn, c_proj, ln_1), Hugging Face LLaMA-style (q/k/v/o_proj,
#      grouped-query, input_layernorm) and BERT-style (query/key/value, output.dense) modules,
#      each scored by `attnsweep score --json` exactly as the same weights under the names the
#      scorer reads (written by tests/make_safetensors.py) are scored, to 1e-6; without the
#      fold the pre-LN scores differ; a model without attention and NaN weights are refused,
#      nothing written;
#   3. the helper installed: `cmake --install --component python` puts it under
#      PREFIX/share/attnsweep/python, and a binary in PREFIX/bin gives a program that one;
#   4. a program trial stopped twice (SIGUSR1 to mpirun) and continued with --resume twice
#      keeps its whole curve, steps 1 to 24 once each and in order, the copy of a step
#      reported again after a restart from an older checkpoint the later attempt's, in the
#      results file and in the journal (the results file rebuilt from it alike); a line
#      planted in the curve's record (TRIAL_DIR/curve.jsonl) is said and read up to.
# Usage: bash tests/test_python_helper.sh /path/to/attnsweep   (from the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
export ASAN_OPTIONS=$asan_noleaks  # every sweep here is under mpirun: see sanitizer_env.sh
prog=$here/programs/helper_program.py
python_dir=$(cd "$here/../python" && pwd)

# helper_yaml NAME PARAMETER-LINES...: a sweep of the helper's program.
helper_yaml() {
    local name=$1
    shift
    program_grid_yaml "$name" "$prog" "seed: 2" "metric: {name: val_loss, goal: minimize}" "budget: {grace: 5}" -- "$@"
}

# ---------------------------------------------------------------------------
echo "== 1. report(): refusals, and its lines read by the runner  [$((SECONDS - start)) s]"
PYTHONPATH=$python_dir "$py" - <<'PY' || fail "report() refuses what the protocol does not allow"
import os, signal, numpy as np
from attnsweep.trial import report, should_stop
os.environ.pop("ATTNSWEEP_METRICS", None)
bad = []
if should_stop(): bad.append("should_stop() before any SIGTERM: True")
os.kill(os.getpid(), signal.SIGTERM)  # handled: the check goes on
if not should_stop(): bad.append("should_stop() after SIGTERM: False")
for step, metrics, error, words in ((-1, {}, ValueError, "step is -1 (an integer from 0"),
                                    (True, {}, ValueError, "step is True"), (2**31, {}, ValueError, "step is 2147483648"),
                                    (1.5, {}, ValueError, "step is 1.5"),
                                    (1, {"val_loss": "low"}, TypeError, "val_loss is str 'low' (a metric is a number"),
                                    (1, {"lr": np.ones(3)}, TypeError, "lr is a tensor of several elements"),
                                    (1, {"checkpoint": 3}, TypeError, "checkpoint is 3 (a path)")):
    try:
        report(step, **metrics)
        bad.append(f"report({step!r}, {metrics}) was accepted")
    except error as e:
        if words not in str(e): bad.append(f"report({step!r}, {metrics}): '{e}' lacks '{words}'")
if bad: print("\n".join(bad))
raise SystemExit(1 if bad else 0)
PY
pass "report() refuses a negative, boolean, too large or fractional step, a text, several numbers, a checkpoint that is no path; should_stop() sees SIGTERM"

helper_yaml reported "kind: {value: report}"
mpi 2 run "$tmp/reported.yaml" -o "$tmp/reported.h5"
[[ $rc == 0 ]] || fail "the helper's program's sweep exits 0 (got $rc)"
pycheck "report()'s lines as the runner read them" "$tmp/reported.h5" "$python_dir" "$here" <<'PY'
import json, os, sys, numpy as np
bad = []
from numcheck import close
from attnsweep.results import Results
rs = Results(sys.argv[1])
a = rs.trial_attrs(0)
row, curve = rs.summary.iloc[0], rs.curves(0)
if a["status"] != "ok": bad.append(f"status: expected ok, got {a['status']} {a['reason']}")
if list(curve["step"]) != [1, 2, 3]: bad.append(f"curve steps: expected [1, 2, 3], got {list(curve['step'])}")
if not close(curve["val_loss"], [1, 1 / 2, 1 / 3]): bad.append(f"val_loss: got {curve['val_loss']}")
if not close(curve["val_accuracy"], [0.25, 0.5, 0.75]): bad.append(f"val_accuracy: got {curve['val_accuracy']}")
if not np.isnan(curve["train_loss"]).all(): bad.append(f"train_loss: expected NaN (null), got {curve['train_loss']}")
if row["n_params"] != 1003: bad.append(f"n_params: expected 1003 (the last line's), got {row['n_params']}")
lines = [json.loads(l) for l in open(a["metrics"])]
if [l["mine"] for l in lines] != [1, 4, 9] or lines[0]["train_loss"] is not None:
    bad.append(f"the metrics file: expected the program's key and null, got {lines}")
helper = json.load(open(os.path.join(a["trial_dir"], "helper.json")))
want = os.path.join(sys.argv[2], "attnsweep", "trial.py")
if os.path.realpath(helper["module"]) != want: bad.append(f"the helper: expected {want}, got {helper['module']}")
if helper["PYTHONPATH"].split(":")[:2] != [sys.argv[2], sys.argv[3]]:
    bad.append(f"PYTHONPATH: expected {sys.argv[2]} first, then the caller's {sys.argv[3]}; got {helper['PYTHONPATH']}")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "report()'s lines: the curve, NaN as null, n_params, its own key kept; the helper from attnsweep's PYTHONPATH"

# ---------------------------------------------------------------------------
echo "== 2. save_attention() scored as the same weights under the scorer's names  [$((SECONDS - start)) s]"
PYTHONPATH=$python_dir:$PYTHONPATH pycheck "save_attention()" "$bin" "$tmp/weights" <<'PY'
import json, os, subprocess, sys
import numpy as np, torch, torch.nn as nn
import make_safetensors as ms
from attnsweep.trial import save_attention
bad = []
binary, root = sys.argv[1], sys.argv[2]
torch.manual_seed(7)


def reference(name, tensors, heads):
    """The weights under names the scorer reads, written by tests/make_safetensors.py."""
    path = os.path.join(root, name, "model.safetensors")
    ts = [(n, "F32", t.shape, ms.encode(t.detach().numpy(), "F32")[0]) for n, t in tensors.items()]
    ms.write(path, ms.safetensors_bytes(ts))
    ms.write_json(os.path.join(root, name, "config.json"), {"num_attention_heads": heads})
    return path


def score(path):
    out = subprocess.run([binary, "score", path, "--json", "-o", path + ".scores.h5"], capture_output=True, text=True)
    if out.returncode != 0: raise SystemExit(f"attnsweep score {path}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def numbers(tree, at=""):
    """Every number of a score's JSON, by where it is."""
    if isinstance(tree, dict): return {k: v for key, x in tree.items() for k, v in numbers(x, f"{at}.{key}").items()}
    if isinstance(tree, list): return {k: v for i, x in enumerate(tree) for k, v in numbers(x, f"{at}[{i}]").items()}
    number = isinstance(tree, (int, float)) and not isinstance(tree, bool)
    return {at: tree} if number and at != ".seconds" else {}


def helper(name, model):
    os.makedirs(os.path.join(root, name), exist_ok=True)
    return save_attention(model, os.path.join(root, name, "model.safetensors"))


def compare(name, model, tensors, heads, form):
    got, want = score(helper(name, model)), score(reference(name + "_ref", tensors, heads))
    g, w = numbers(got), numbers(want)
    if g.keys() != w.keys(): bad.append(f"{name}: the scores' fields differ: {sorted(g.keys() ^ w.keys())[:5]}")
    far = [k for k in g.keys() & w.keys() if abs(g[k] - w[k]) > 1e-6 * max(1.0, abs(w[k]))]
    if far: bad.append(f"{name}: {len(far)} numbers differ, e.g. {far[0]}: {g[far[0]]} by the helper, {w[far[0]]} as written")
    if form not in got["form"]: bad.append(f"{name}: form '{got['form']}', expected '{form}'")
    return got


def randomise(model):  # LayerNorms and biases away from 1 and 0, so folding them counts
    with torch.no_grad():
        for p in model.parameters(): p.add_(0.3 * torch.randn_like(p))
    return model


mha = randomise(nn.MultiheadAttention(16, 4))
compare("mha", mha, {"attn.in_proj_weight": mha.in_proj_weight, "attn.in_proj_bias": mha.in_proj_bias,
                     "attn.out_proj.weight": mha.out_proj.weight}, 4, "query bias in the QK form")

enc = randomise(nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4, 32, norm_first=True), 2))
timm = {}
for i, layer in enumerate(enc.layers):
    m = layer.self_attn
    timm.update({f"blocks.{i}.norm1.weight": layer.norm1.weight, f"blocks.{i}.norm1.bias": layer.norm1.bias,
                 f"blocks.{i}.attn.qkv.weight": m.in_proj_weight, f"blocks.{i}.attn.qkv.bias": m.in_proj_bias,
                 f"blocks.{i}.attn.proj.weight": m.out_proj.weight})
pre = compare("pre_ln", enc, timm, 4, "norm1 folded")
unfolded = score(reference("pre_ln_unfolded", {k: v for k, v in timm.items() if "norm1" not in k}, 4))
if abs(unfolded["rank_deviation"] - pre["rank_deviation"]) + abs(unfolded["correlation"] - pre["correlation"]) < 1e-4:
    bad.append("pre_ln: the scores without norm1 equal those with it: the test does not see the fold")


class CausalSelfAttention(nn.Module):  # nanoGPT's
    def __init__(self):
        super().__init__()
        self.n_head, self.c_attn, self.c_proj = 4, nn.Linear(16, 48), nn.Linear(16, 16)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(16), CausalSelfAttention()


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.h = nn.ModuleList([Block(), Block()])


gpt = randomise(GPT())
compare("nanogpt", gpt, {"transformer." + n: p for n, p in gpt.state_dict().items()
                         if "ln_1" in n or "c_attn" in n or n.endswith("c_proj.weight")}, 4, "norm1 folded")


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))


class LlamaAttention(nn.Module):
    def __init__(self, d, heads, kv_heads):
        super().__init__()
        self.num_heads, dk = heads, d // heads
        self.q_proj, self.o_proj = nn.Linear(d, d, bias=True), nn.Linear(d, d, bias=False)
        self.k_proj, self.v_proj = nn.Linear(d, kv_heads * dk, bias=True), nn.Linear(d, kv_heads * dk, bias=True)


class LlamaLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm, self.self_attn = RMSNorm(16), LlamaAttention(16, 4, 2)


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([LlamaLayer(), LlamaLayer()])


llama = randomise(Llama())
hf = {"model." + n: p for n, p in llama.state_dict().items() if "self_attn" in n or "input_layernorm" in n}
compare("llama", llama, hf, 4, "RMSNorm gain folded")


class BertSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_attention_heads = 4
        self.query, self.key, self.value = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 16)


class BertSelfOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense, self.LayerNorm = nn.Linear(16, 16), nn.LayerNorm(16)


class BertAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.self, self.output = BertSelfAttention(), BertSelfOutput()


class BertLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = BertAttention()


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(), BertLayer()])


bert = randomise(Bert())
names = [f"attention.self.{r}.{w}" for r in ("query", "key", "value") for w in ("weight", "bias")]
compare("bert", bert, {f"encoder.layer.{i}.{n}": p for i in range(2) for n, p in bert.layer[i].state_dict().items()
                       if n in names or n == "attention.output.dense.weight"}, 4, "post-LN")

for name, model, words in (("none", nn.Sequential(nn.Linear(4, 4), nn.ReLU()), "Sequential has no attention layer"),
                           ("nan", nn.MultiheadAttention(8, 2), "in_proj_weight holds NaN or infinity")):
    if name == "nan":
        with torch.no_grad(): model.in_proj_weight[0, 0] = float("nan")
    try:
        helper(name, model)
        bad.append(f"{name}: save_attention accepted it")
    except ValueError as e:
        if words not in str(e): bad.append(f"{name}: '{e}' lacks '{words}'")
    if os.listdir(os.path.join(root, name)): bad.append(f"{name}: refused, but wrote {os.listdir(os.path.join(root, name))}")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
pass "save_attention(): MHA, pre-LN encoder (norm1 folded), nanoGPT, LLaMA-style with GQA, BERT-style scored as their weights; no attention and NaN refused"

# ---------------------------------------------------------------------------
echo "== 3. the helper installed, and found beside an installed binary  [$((SECONDS - start)) s]"
build=$(dirname "$bin")
cmake --install "$build" --prefix "$tmp/prefix" --component python >"$tmp/out" 2>"$tmp/err" ||
    fail "cmake --install --component python"
installed=$tmp/prefix/share/attnsweep/python
[[ -f $installed/attnsweep/trial.py && -f $installed/attnsweep/__init__.py ]] ||
    fail "the helper installed under PREFIX/share/attnsweep/python: $(find "$tmp/prefix" -type f)"
mkdir -p "$tmp/prefix/bin" && cp "$bin" "$tmp/prefix/bin/attnsweep"  # what the binary's install rule does
ASAN_OPTIONS=$asan_noleaks mpirun -np 2 "$tmp/prefix/bin/attnsweep" run "$tmp/reported.yaml" -o "$tmp/installed.h5" \
    >"$tmp/out" 2>"$tmp/err" || fail "the installed binary's sweep"
module=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["module"])' "$tmp/installed.trials/000000/helper.json")
[[ $(realpath "$module") == "$(realpath "$installed")/attnsweep/trial.py" ]] ||
    fail "the installed binary gave the program the installed helper, got $module"
pass "installed to PREFIX/share/attnsweep/python; PREFIX/bin/attnsweep's programs import it from there"

# ---------------------------------------------------------------------------
echo "== 4. a program trial stopped twice keeps its whole curve  [$((SECONDS - start)) s]"
helper_yaml resumed "kind: {value: slow}" "steps: {value: 24}" "sleep: {value: 0.2}"
metrics=$tmp/resumed.trials/000000/metrics.jsonl
# stop_after N [--resume]: run the sweep until the trial's metrics file holds N lines of
# this attempt (train_loss its number), then SIGUSR1 to mpirun; it must exit 3. The
# attempt's lines go to $tmp/attemptK.jsonl.
attempt=0
stop_after() {
    local n=$1 job mine="\"train_loss\": $((attempt + 1))}"
    shift
    rc=0
    mpirun -np 2 "$bin" run "$tmp/resumed.yaml" -o "$tmp/resumed.h5" "$@" >"$tmp/out" 2>"$tmp/err" &
    job=$!
    background+=("$job")
    for _ in $(seq 600); do [[ $(grep -cF "$mine" "$metrics" 2>/dev/null) -ge $n ]] && break; sleep 0.1; done
    [[ $(grep -cF "$mine" "$metrics") -ge $n ]] || fail "attempt $((attempt + 1)) reported $n steps"
    kill -USR1 "$job"
    wait "$job" || rc=$?
    [[ $rc == 3 ]] || fail "SIGUSR1 stops attempt $((attempt + 1)) with exit code 3 (got $rc)"
    attempt=$((attempt + 1))
    cp "$tmp/resumed.trials/000000/metrics.jsonl" "$tmp/attempt$attempt.jsonl"
}
stop_after 6
echo '{"step": "not a record"}' >>"$tmp/resumed.trials/000000/curve.jsonl"  # the program's directory: untrusted
stop_after 4 --resume
grep -q "curve.jsonl: line [0-9]* is not a curve record; the curve is read up to it" "$tmp/err" ||
    fail "a line that is no curve record in the record is said: $(grep -i curve "$tmp/err" | head -3)"
mpi 2 run "$tmp/resumed.yaml" -o "$tmp/resumed.h5" --resume
[[ $rc == 0 ]] || fail "the third attempt completes the sweep (got $rc)"
cp "$metrics" "$tmp/attempt3.jsonl"
check_curve() {  # check_curve RESULTS WHAT
    pycheck "$2" "$1" "$tmp" <<'PY'
import json, sys
from attnsweep.results import Results
bad = []
rs, tmp = Results(sys.argv[1]), sys.argv[2]
attempts = [[json.loads(l) for l in open(f"{tmp}/attempt{k}.jsonl")] for k in (1, 2, 3)]
want = {}  # step -> the attempt whose copy stands: a later attempt's first step replaces the rest
for lines in attempts:
    want = {s: a for s, a in want.items() if s < lines[0]["step"]}
    want.update({l["step"]: l["train_loss"] for l in lines})
again = sum(1 for k in (1, 2) if attempts[k][0]["step"] <= attempts[k - 1][-1]["step"])
if again != 2: bad.append(f"both restarts should report steps again (the checkpoint lags 2 steps): {again} did")
curve = rs.curves(0)
row = rs.summary.iloc[0]
if row["status"] != "ok" or row["steps"] != 24: bad.append(f"the trial: {row['status']} at step {row['steps']}")
if list(curve["step"]) != list(range(1, 25)): bad.append(f"curve steps: expected 1..24 once each, got {list(curve['step'])}")
got = dict(zip(curve["step"].tolist(), curve["train_loss"].tolist()))
if got != want: bad.append(f"the attempt of each step: expected {want}, got {got}")
if any(b < a for a, b in zip(curve["seconds"], curve["seconds"][1:])): bad.append(f"seconds go back: {list(curve['seconds'])}")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}
check_curve "$tmp/resumed.h5" "the continued trial's curve in the results file"
pass "stopped twice, continued twice: the curve holds steps 1..24 once each, a step reported again the later attempt's"
rm "$tmp/resumed.h5"
mpi 2 run "$tmp/resumed.yaml" -o "$tmp/resumed.h5" --resume
[[ $rc == 0 ]] || fail "--resume rebuilds the results file from the journal (got $rc)"
check_curve "$tmp/resumed.h5" "the continued trial's curve from the journal"
pass "the journal's record holds the whole curve: the results file rebuilt from it alike"

echo "test_python_helper: $checks checks passed in $((SECONDS - start)) s"

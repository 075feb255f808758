#!/usr/bin/env bash
# test_docs.sh: the documentation is true to the program. (1) Every relative link and
# image in README.md and docs/**/*.md points at a file that exists, and an #anchor at a
# heading of that file. (2) Every ```yaml block is checked: a whole sweep file passes
# `attnsweep validate` (run in the repository, so programs and data resolve as in the
# docs' commands); a block whose info string is "yaml fragment" (a piece of a sweep file)
# at least parses as YAML. (3) `cmake --install` of the build puts attnsweep(1) and one
# attnsweep-VERB(1) a verb `attnsweep --help` lists under PREFIX/share/man/man1; `man`
# finds each by name through MANPATH, groff renders it with every warning on and warns of
# nothing, and the page names every option the verb's --help lists.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" "$@"
root=$(cd "$here/.." && pwd)
build=$(dirname "$bin")
docs=("$root/README.md")
while IFS= read -r -d '' f; do docs+=("$f"); done < <(find "$root/docs" -name '*.md' -print0 | sort -z)

# ---- (1) links
"$py" - "${docs[@]}" >"$tmp/links" 2>&1 <<'PY' || { cat "$tmp/links" >&2; fail "broken links (above)"; }
import os, re, sys

def prose(path):  # the lines outside fenced code blocks, inline code removed
    fence = False
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            yield n, re.sub(r"`[^`]*`", "", line)

def anchors(path):  # GitHub's ids of the headings: lower case, punctuation dropped, spaces as -
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for _, line in prose(path) for h in [line.lstrip("#")] if re.match(r"#{1,6} ", line)}

bad, count = [], 0
for path in sys.argv[1:]:
    for n, line in prose(path):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if re.match(r"[a-z]+:", target):
                continue
            count += 1
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            if not os.path.exists(dest):
                bad.append(f"{path}:{n}: {target}: no such file")
            elif anchor and (not dest.endswith(".md") or anchor not in anchors(dest)):
                bad.append(f"{path}:{n}: {target}: no heading #{anchor} in {os.path.basename(dest)}")
print("\n".join(bad) if bad else f"{count} links")
sys.exit(1 if bad else 0)
PY
pass "links of README.md and docs/: $(cat "$tmp/links")"

# ---- (2) the ```yaml blocks: NNN-whole.yaml or NNN-fragment.yaml, with where each came from
"$py" - "$tmp/yaml" "${docs[@]}" <<'PY'
import os, sys
out = sys.argv[1]
os.makedirs(out)
k = 0
for path in sys.argv[2:]:
    block = None
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if block is None and line.startswith("```yaml"):
            kind = line[3:].split()
            block, start = [], n
        elif block is not None and line.startswith("```"):
            k += 1
            name = f"{out}/{k:03d}-{'fragment' if kind[1:] == ['fragment'] else 'whole'}.yaml"
            open(name, "w").write("".join(block))
            open(name + ".from", "w").write(f"{path}:{start}")
            block = None
        elif block is not None:
            block.append(line)
PY
whole=0 fragments=0 shipped=0
for y in "$tmp"/yaml/*.yaml; do
    from=$(cat "$y.from")
    if [[ $y == *-fragment.yaml ]]; then
        "$py" -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' "$y" 2>"$tmp/err" ||
            fail "$from: the yaml fragment does not parse: $(tail -3 "$tmp/err")"
        fragments=$((fragments + 1))
    else
        cp "$y" "$tmp/yaml/sweep.yaml"
        rc=0
        (cd "$root" && "$bin" validate "$tmp/yaml/sweep.yaml") >"$tmp/out" 2>"$tmp/err" || rc=$?
        [[ $rc == 0 ]] || fail "$from: attnsweep validate: exit $rc: $(cat "$tmp/err")"
        # a block of sweep NAME in a page that names sweeps/NAME.yaml is that file, byte for byte
        name=$(sed -n 's/^name: \([A-Za-z0-9_.-]*\).*/\1/p' "$y" | head -n 1)
        if [[ -n $name && -e $root/sweeps/$name.yaml ]] && grep -qF "sweeps/$name.yaml" "${from%:*}"; then
            cmp -s "$y" "$root/sweeps/$name.yaml" || fail "$from: the block of sweep $name differs from sweeps/$name.yaml"
            shipped=$((shipped + 1))
        fi
        whole=$((whole + 1))
    fi
done
[[ $whole -ge 2 ]] || fail "expected at least the README's two sweep files, got $whole whole yaml blocks"
[[ $shipped -ge 2 ]] || fail "expected the README's two first sweeps to be sweeps/first.yaml and sweeps/first_torch.yaml, $shipped are"
pass "yaml blocks: $whole sweep files validate ($shipped of them the sweeps/ file their page names), $fragments fragments parse"

# ---- (3) the manual pages, installed
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/out" 2>"$tmp/err" || fail "cmake --install: $(cat "$tmp/err")"
[[ -x $prefix/bin/attnsweep ]] || fail "cmake --install: no $prefix/bin/attnsweep"
mandir=$prefix/share/man/man1
mapfile -t verbs < <("$bin" --help | sed -n 's/^  \([a-z]*\) .*/\1/p')
[[ ${#verbs[@]} -gt 0 ]] || fail "attnsweep --help lists no commands"
for page in attnsweep "${verbs[@]/#/attnsweep-}"; do
    [[ -s $mandir/$page.1 ]] || fail "no manual page $mandir/$page.1"
    MANPATH=$prefix/share/man man -w "$page" >"$tmp/out" 2>"$tmp/err" || fail "man -w $page: $(cat "$tmp/err")"
    [[ $(cat "$tmp/out") == "$mandir/$page.1" ]] || fail "man -w $page: expected $mandir/$page.1, got $(cat "$tmp/out")"
    LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -P-cbou "$mandir/$page.1" >"$tmp/page" 2>"$tmp/err" || fail "groff $page.1 failed"
    [[ ! -s $tmp/err ]] || fail "groff warns of $page.1: $(head -5 "$tmp/err")"
    for section in NAME SYNOPSIS DESCRIPTION; do
        grep -q "^$section" "$tmp/page" || fail "$page.1: no $section section"
    done
    # the rendered page's words, minus signs as ASCII hyphens, for the options below
    sed 's/\xe2\x88\x92/-/g; s/\xe2\x80\x90/-/g' "$tmp/page" >"$tmp/$page.txt"
done
grep -q 'attnsweep-run(1)' "$tmp/attnsweep.txt" || fail "attnsweep(1) does not list attnsweep-run(1)"
for verb in "${verbs[@]}"; do
    "$bin" "$verb" --help >"$tmp/help" || fail "attnsweep $verb --help failed"
    options=$(grep -oE '^  (-[a-zA-Z], )?--[a-z0-9-]+' "$tmp/help" | grep -oE -- '--[a-z0-9-]+')
    [[ -n $options ]] || fail "attnsweep $verb --help lists no options"
    n=0
    for o in $options; do
        # an entry of the page's lists: the term at the margin of a section's text
        grep -qE -- "^ {7}(-[a-zA-Z], )?$o( |$)" "$tmp/attnsweep-$verb.txt" ||
            fail "attnsweep-$verb(1) has no entry for $o, which attnsweep $verb --help lists"
        n=$((n + 1))
    done
    pass "attnsweep-$verb(1): renders without warnings, lists the $n options of --help"
done
echo "PASS: $checks checks of the documentation in $((SECONDS - start)) s"

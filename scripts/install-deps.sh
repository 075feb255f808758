#!/usr/bin/env bash
# Install the Debian packages attnsweep needs to build, test and run.
# Idempotent: prints nothing and installs nothing when everything is present.
set -euo pipefail

packages=(
  gcc make cmake pkg-config
  libopenmpi-dev openmpi-bin libscalapack-openmpi-dev
  libopenblas-dev liblapacke-dev
  libyaml-dev libhdf5-dev hdf5-tools zlib1g-dev libcjson-dev libgsl-dev
  python3 python3-h5py python3-numpy python3-pandas python3-matplotlib python3-yaml python3-scipy python3-statsmodels
  python3-torch
  python3-optuna python3-sklearn
  dataset-fashion-mnist fortunes
  man-db groff-base
)
# Extra packages a caller asks for.
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

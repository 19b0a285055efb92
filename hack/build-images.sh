#!/usr/bin/env bash
# make images: build the operator and worker images with docker or podman, tagged as the chart's defaults
# (image.repository:appVersion and ghcr.io/mrsched/worker:appVersion), so that `helm install` with no image
# values runs what was just built. Without either engine (as on CI) nothing is built and it says so.
# ENGINE=podman picks one; IMAGE_TAG overrides the chart's appVersion.
set -euo pipefail
cd "$(dirname "$0")/.."
engine="${ENGINE:-}"
if [ -z "$engine" ]; then
  for candidate in docker podman; do
    # A client whose engine does not answer (no daemon running) cannot build either.
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" info >/dev/null 2>&1; then
      engine="$candidate"; break
    fi
  done
fi
if [ -z "$engine" ]; then
  echo "make images: no docker or podman engine answers here; no image built" \
       "(operator/Dockerfile and workers/Dockerfile build them where one does)"
  exit 0
fi
app_version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' charts/mrsched/Chart.yaml)"
tag="${IMAGE_TAG:-$app_version}"
repository="$(sed -n 's/^  repository: *//p' charts/mrsched/values.yaml | head -1)"
"$engine" build -f operator/Dockerfile -t "$repository:$tag" .
"$engine" build -f workers/Dockerfile -t "ghcr.io/mrsched/worker:$tag" workers/
echo "built $repository:$tag and ghcr.io/mrsched/worker:$tag with $engine"

#!/usr/bin/env bash
# Build, or reuse from the cache, every control-plane binary the harness runs:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd, kwokctl, kwok, helm.
# Idempotent: a tool whose cache directory already holds all its binaries is not rebuilt.
# Cache: ${MRSCHED_CACHE_DIR:-$HOME/.cache/mrsched}/bin/<tool>-<version>/ (never inside the repo).
# Prints what it builds and how long each build took; prints the cache directories on success.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# One source of truth for the versions, shared with the Python harness (mrsched.localcluster.toolchain).
# shellcheck source=../operator/mrsched/data/toolchain.env
source "$here/../operator/mrsched/data/toolchain.env"
cache="${MRSCHED_CACHE_DIR:-$HOME/.cache/mrsched}/bin"
mkdir -p "$cache"

# Reports binaries as v1.35.4 rather than v0.0.0-master: the apiserver's discovery, kubectl's
# version skew check and kwokctl all read these.
k8s_minor="${KUBERNETES_VERSION#v1.}"; k8s_minor="${k8s_minor%%.*}"
k8s_ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=${KUBERNETES_VERSION} \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=${k8s_minor} \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=${KUBERNETES_VERSION}"

require_pin() { # module-dir module version: the go.mod must pin what versions.env says
  if ! grep -Eq "^\s*(require\s+)?$2 $3(\s|$)" "$here/tools/$1/go.mod"; then
    echo "build-binaries: hack/tools/$1/go.mod does not require $2 $3 (operator/mrsched/data/toolchain.env); fix one of them" >&2
    exit 2
  fi
}
require_pin kubernetes k8s.io/kubernetes "$KUBERNETES_VERSION"
require_pin kubernetes go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
require_pin kwok sigs.k8s.io/kwok "$KWOK_VERSION"
require_pin helm helm.sh/helm/v4 "$HELM_VERSION"

# build <module-dir> <dest-dir> <ldflags> <name>=<package>...
build() {
  local module="$1" dest="$2" ldflags="$3"; shift 3
  local missing=()
  for spec in "$@"; do [ -x "$dest/${spec%%=*}" ] || missing+=("$spec"); done
  if [ ${#missing[@]} -eq 0 ]; then
    echo "reuse  $(basename "$dest"): $dest"
    return
  fi
  mkdir -p "$dest"
  for spec in "${missing[@]}"; do
    local name="${spec%%=*}" pkg="${spec#*=}" start=$SECONDS
    echo "build  $(basename "$dest")/$name ($pkg) ..."
    # Build to a temporary name and rename, so an interrupted build never leaves a half-written
    # binary that a later run would take for a finished one.
    (cd "$here/tools/$module" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$dest/.$name.tmp" "$pkg")
    mv -f "$dest/.$name.tmp" "$dest/$name"
    echo "built  $(basename "$dest")/$name in $((SECONDS - start)) s"
  done
}

total=$SECONDS
build kubernetes "$cache/kubernetes-$KUBERNETES_VERSION" "$k8s_ldflags" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
  kubectl=k8s.io/kubernetes/cmd/kubectl
build kubernetes "$cache/etcd-$ETCD_VERSION" "-s -w" etcd=go.etcd.io/etcd/server/v3
build kwok "$cache/kwok-$KWOK_VERSION" "-s -w" \
  kwokctl=sigs.k8s.io/kwok/cmd/kwokctl kwok=sigs.k8s.io/kwok/cmd/kwok
build helm "$cache/helm-$HELM_VERSION" "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
  helm=helm.sh/helm/v4/cmd/helm
echo "binaries ready in $((SECONDS - total)) s under $cache"

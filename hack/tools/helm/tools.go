//go:build tools

// Package tools pins the main packages this module builds.
package tools

import _ "helm.sh/helm/v4/cmd/helm"

package controlplane

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// HelmTemplate renders the chart at dir with values over its defaults, as
// `helm template` does: its templates' objects, file by file (a chart's
// CRDs among them: charts/cardinal renders its CRDs as templates). It uses
// Helm's own chart loader and engine; no helm binary is needed.
func HelmTemplate(dir, release string, values map[string]any) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v1.37.0", Major: "1", Minor: "37"}
	if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
		return nil, err
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: release, Namespace: "default", IsInstall: true}, caps)
	if err != nil {
		return nil, fmt.Errorf("the chart's values: %w", err)
	}
	out, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart %s: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if !strings.HasSuffix(name, ".yaml") || strings.HasPrefix(path.Base(name), "_") {
			continue // NOTES.txt, helpers
		}
		more, err := decodeManifests(name, []byte(out[name]))
		if err != nil {
			return nil, err
		}
		objs = append(objs, more...)
	}
	return objs, nil
}

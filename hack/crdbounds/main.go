// Command crdbounds adds to the generated Queue CRD the bounds controller-gen
// has no marker for: a length for each quantity in a queue's guarantee and
// capability. controller-gen gives resource.Quantity a fixed schema without
// one, and without it the apiserver prices the CEL rules that compare
// quantities as if each could be megabytes long, and refuses the CRD. With
// the bounds in the generated file, the file installs on its own
// (kubectl apply -f, or a Helm chart's crds/ directory).
//
//	go run ./hack/crdbounds config/crd/bases/scheduling.cardinal.dev_queues.yaml
package main

import (
	"bytes"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// quantityMaxLength bounds a quantity's text: far more than any real one.
const quantityMaxLength = 64

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdbounds CRD.yaml")
		os.Exit(2)
	}
	if err := bound(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crdbounds:", err)
		os.Exit(1)
	}
}

func bound(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(data, &crd); err != nil {
		return err
	}
	versions, _ := get(crd, "spec", "versions").([]any)
	if len(versions) == 0 {
		return fmt.Errorf("%s: no spec.versions", path)
	}
	for _, v := range versions {
		props, _ := get(v, "schema", "openAPIV3Schema", "properties", "spec", "properties").(map[string]any)
		for _, field := range []string{"guarantee", "capability"} {
			item, ok := get(props, field, "additionalProperties").(map[string]any)
			if !ok {
				return fmt.Errorf("%s: spec.%s has no additionalProperties schema", path, field)
			}
			item["maxLength"] = quantityMaxLength
		}
		if err := boundSelector(get(props, "namespaceSelector")); err != nil {
			return fmt.Errorf("%s: spec.namespaceSelector: %w", path, err)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("---\n")
	b.Write(out)
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// Bounds of a label selector, far beyond any real one: without them the
// apiserver prices the CEL rules over its expressions as unbounded.
const (
	selectorMaxExpressions = 64
	selectorMaxValues      = 256
	labelKeyMaxLength      = 317 // prefix (253) + "/" + name (63)
	labelValueMaxLength    = 63
)

// boundSelector bounds a metav1.LabelSelector's lists and strings.
func boundSelector(sel any) error {
	exprs, ok := get(sel, "properties", "matchExpressions").(map[string]any)
	if !ok {
		return fmt.Errorf("no matchExpressions schema")
	}
	exprs["maxItems"] = selectorMaxExpressions
	props, ok := get(exprs, "items", "properties").(map[string]any)
	if !ok {
		return fmt.Errorf("no matchExpressions item schema")
	}
	for key, max := range map[string]int{"key": labelKeyMaxLength, "operator": 16} {
		if f, ok := props[key].(map[string]any); ok {
			f["maxLength"] = max
		}
	}
	if values, ok := props["values"].(map[string]any); ok {
		values["maxItems"] = selectorMaxValues
		if item, ok := values["items"].(map[string]any); ok {
			item["maxLength"] = labelValueMaxLength
		}
	}
	if labels, ok := get(sel, "properties", "matchLabels").(map[string]any); ok {
		labels["maxProperties"] = selectorMaxExpressions
		if item, ok := labels["additionalProperties"].(map[string]any); ok {
			item["maxLength"] = labelValueMaxLength
		}
	}
	return nil
}

// get walks nested maps by key, nil where one is missing.
func get(obj any, keys ...string) any {
	for _, k := range keys {
		m, ok := obj.(map[string]any)
		if !ok {
			return nil
		}
		obj = m[k]
	}
	return obj
}

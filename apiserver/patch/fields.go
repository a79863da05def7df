package patch

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxFieldProblems bounds the problems one patch reports. kube-apiserver
// reports them all, but a 3 MiB body of one-letter unknown keys would then
// answer with hundreds of thousands of Warning headers.
const maxFieldProblems = 100

// fieldCheck collects what field validation finds in a patch: unknown
// fields and duplicate keys. A disabled check (fieldValidation=Ignore)
// finds nothing, and its callers skip the work.
type fieldCheck struct {
	enabled  bool
	problems []error
	more     int // problems past maxFieldProblems, only counted
}

func (c *fieldCheck) add(errs ...error) {
	for _, err := range errs {
		if len(c.problems) < maxFieldProblems {
			c.problems = append(c.problems, err)
		} else {
			c.more++
		}
	}
}

// all returns the problems, the ones past the limit summed up in one.
func (c *fieldCheck) all() []error {
	if c.more == 0 {
		return c.problems
	}
	return append(c.problems[:len(c.problems):len(c.problems)], fmt.Errorf("%d more", c.more))
}

// texts returns the problems as warning texts, one each.
func (c *fieldCheck) texts() []string {
	out := make([]string, 0, len(c.problems)+1)
	for _, err := range c.all() {
		out = append(out, err.Error())
	}
	return out
}

// strictError refuses a JSON, merge or strategic merge patch under
// fieldValidation=Strict as kube-apiserver does, 422 with the strict
// decoding error on the field "patch", but without the patched object as
// the invalid value: it may be a Secret.
func (m *Manager) strictError(current runtime.Object, c *fieldCheck) error {
	name := ""
	if accessor, err := meta.Accessor(current); err == nil {
		name = accessor.GetName()
	}
	return apierrors.NewInvalid(m.gvk.GroupKind(), name, field.ErrorList{
		field.Invalid(field.NewPath("patch"), field.OmitValueType{}, runtime.NewStrictDecodingError(c.all()).Error()),
	})
}

// The two ways sigs.k8s.io/yaml begins a strict decoding error.
const (
	yamlErrorsPrefix          = "yaml: unmarshal errors:\n"
	yamlConversionErrorPrefix = "error converting YAML to JSON: " + yamlErrorsPrefix
)

// YAMLWarnings returns the Warning texts kube-apiserver sends for a strict
// decoding problem: a strict YAML error split into one text per line, each
// naming a line of the body ("line 3: key \"a\" already set in map"), at
// most 100 and a count of the rest; any other error is one text.
func YAMLWarnings(err error) []string {
	text := err.Error()
	rest, ok := strings.CutPrefix(text, yamlConversionErrorPrefix)
	if !ok {
		if rest, ok = strings.CutPrefix(text, yamlErrorsPrefix); !ok {
			return []string{text}
		}
	}
	var out []string
	lines := strings.Split(rest, "\n")
	for i, line := range lines {
		if i == maxFieldProblems {
			out = append(out, fmt.Sprintf("%d more", len(lines)-i))
			break
		}
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

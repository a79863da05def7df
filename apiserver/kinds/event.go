package kinds

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Length limits on the fields of an event written with eventTime (the
// events.k8s.io style).
const (
	eventReportingInstanceMaxLength = 128
	eventActionMaxLength            = 128
	eventReasonMaxLength            = 128
	eventNoteMaxLength              = 1024
)

// DefaultEvent exists so that every kind has the same entry points. kube
// registers no defaults for Event, in core/v1 or events.k8s.io/v1, so it
// changes nothing.
func DefaultEvent(e *corev1.Event) {}

// ValidateEvent validates a core/v1 event on create (old == nil) or update,
// as kube does for requests to the core/v1 API; creates and updates get the
// same checks. The namespace must be a DNS subdomain. An event without
// eventTime (the core/v1 style) must sit in its involved object's namespace,
// or in "default" when the object is cluster-scoped. An event with
// eventTime must name its reportingController (a qualified name),
// reportingInstance, action and reason within their length limits, and may
// be about a cluster-scoped object only from "default" or "kube-system".
//
// kube checks more (type Normal or Warning, series, no deprecated fields,
// immutable fields on update) only on writes through events.k8s.io/v1,
// which this function cannot tell apart from core/v1 ones.
func ValidateEvent(e, old *corev1.Event) field.ErrorList {
	if e == nil {
		e = &corev1.Event{}
	}
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	mismatch := func() {
		errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			// Old clients put events about cluster-scoped objects in "default".
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				mismatch()
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			mismatch()
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			mismatch()
		}
		if e.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
		}
		errs = append(errs, validateQualifiedName(e.ReportingController, field.NewPath("reportingController"))...)
		errs = append(errs, requiredWithLimit(e.ReportingInstance, eventReportingInstanceMaxLength, field.NewPath("reportingInstance"))...)
		errs = append(errs, requiredWithLimit(e.Action, eventActionMaxLength, field.NewPath("action"))...)
		errs = append(errs, requiredWithLimit(e.Reason, eventReasonMaxLength, field.NewPath("reason"))...)
		if len(e.Message) > eventNoteMaxLength {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", eventNoteMaxLength)))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return errs
}

func requiredWithLimit(value string, limit int, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if value == "" {
		errs = append(errs, field.Required(fldPath, ""))
	}
	if len(value) > limit {
		errs = append(errs, field.Invalid(fldPath, "", fmt.Sprintf("can have at most %v characters", limit)))
	}
	return errs
}

// EventFields returns the fields an event can be selected by, as kube's
// field selectors see them. "source" falls back to reportingComponent for
// events that carry no source.
func EventFields(e *corev1.Event) fields.Set {
	if e == nil {
		e = &corev1.Event{}
	}
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	o := e.InvolvedObject
	return fields.Set{
		"metadata.name":                  e.Name,
		"metadata.namespace":             e.Namespace,
		"involvedObject.kind":            o.Kind,
		"involvedObject.namespace":       o.Namespace,
		"involvedObject.name":            o.Name,
		"involvedObject.uid":             string(o.UID),
		"involvedObject.apiVersion":      o.APIVersion,
		"involvedObject.resourceVersion": o.ResourceVersion,
		"involvedObject.fieldPath":       o.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	}
}

package policytest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/trustplane/trustplane/admission/opa"
	"github.com/trustplane/trustplane/apiserver/registry"
)

// Operations are the admission operations a request may have.
var Operations = []admission.Operation{admission.Create, admission.Update, admission.Delete, admission.Connect}

// Request is one admission request as an author describes it: an object
// (with UPDATE, the object as stored too), what is done with it, by whom.
type Request struct {
	Operation admission.Operation
	// Object is the request's object; with DELETE, the object deleted.
	Object runtime.Object
	// Old is the object as stored, with UPDATE only.
	Old runtime.Object
	// Namespace is the request's: the object's own must agree with it.
	// Empty: the object's, else default, as kubectl sends it.
	Namespace string
	User      user.Info
	DryRun    bool
}

// Kinds are the kinds the API server serves, and how it decodes and
// defaults them: what makes an author's object the object the server's
// admission stages would see.
type Kinds struct {
	scheme   *runtime.Scheme
	registry *registry.Registry
	decoder  runtime.Decoder
}

// NewKinds returns the server's kinds.
func NewKinds() (*Kinds, error) {
	scheme, err := registry.NewScheme()
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(scheme)
	if err != nil {
		return nil, err
	}
	return &Kinds{scheme: scheme, registry: reg, decoder: serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()}, nil
}

// Decode decodes one object, YAML or JSON, strictly: an unknown or
// duplicate field is an error, as kubectl's default field validation
// makes it on the server.
func (k *Kinds) Decode(doc []byte) (runtime.Object, error) {
	obj, gvk, err := k.decoder.Decode(doc, nil, nil)
	if err != nil {
		return nil, err
	}
	if _, ok := k.registry.ForKind(*gvk); !ok {
		return nil, fmt.Errorf("kind %s is not served by trustplane", gvk)
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return obj, nil
}

// DecodeOne decodes the one object of data, a YAML stream or JSON.
func (k *Kinds) DecodeOne(data []byte) (runtime.Object, error) {
	docs, err := documents(data)
	if err != nil {
		return nil, err
	}
	switch len(docs) {
	case 0:
		return nil, errors.New("no object")
	case 1:
		return k.Decode(docs[0])
	default:
		return nil, errors.New("more than one object; give one")
	}
}

// documents are the non-empty documents of a YAML stream (or of JSON).
func documents(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			out = append(out, doc)
		}
	}
}

// resource is the served resource of obj's kind.
func (k *Kinds) resource(obj runtime.Object) (*registry.Resource, schema.GroupVersionKind, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	res, ok := k.registry.ForKind(gvk)
	if !ok {
		return nil, gvk, fmt.Errorf("kind %s is not served by trustplane", gvk)
	}
	return res, gvk, nil
}

// Attributes are the admission attributes of r, built as the server's
// write path builds them: in the namespace of the request, with the
// kind's defaults and what the server resets on create or keeps on
// update. It changes r's objects.
func (k *Kinds) Attributes(r Request) (admission.Attributes, error) {
	if r.Object == nil {
		return nil, errors.New("no object")
	}
	res, gvk, err := k.resource(r.Object)
	if err != nil {
		return nil, err
	}
	obj, old := r.Object, r.Old
	switch {
	case r.Operation == admission.Update && old == nil:
		return nil, errors.New("an UPDATE needs the object as stored")
	case r.Operation != admission.Update && old != nil:
		return nil, fmt.Errorf("only an UPDATE has an object as stored, not a %s", r.Operation)
	case old != nil && old.GetObjectKind().GroupVersionKind() != gvk:
		return nil, fmt.Errorf("the object as stored is a %s, the object a %s", old.GetObjectKind().GroupVersionKind(), gvk)
	}
	if r.Operation == admission.Delete {
		// What a delete admits is the stored object.
		obj, old = nil, obj
	}
	var namespace, name string
	first := true
	for _, o := range []runtime.Object{obj, old} {
		if o == nil {
			continue
		}
		accessor, err := meta.Accessor(o)
		if err != nil {
			return nil, err
		}
		ns, err := namespaceOf(res, r.Namespace, accessor)
		if err != nil {
			return nil, err
		}
		if !first && ns != namespace {
			return nil, fmt.Errorf("the object is in namespace %q, as stored in %q: an update keeps the namespace", namespace, ns)
		}
		namespace = ns
		accessor.SetNamespace(namespace)
		if accessor.GetName() == "" && r.Operation == admission.Create && accessor.GetGenerateName() != "" {
			accessor.SetName(names.SimpleNameGenerator.GenerateName(accessor.GetGenerateName()))
		}
		if !first && accessor.GetName() != name {
			return nil, fmt.Errorf("the object is named %q, as stored %q: an update keeps the name", name, accessor.GetName())
		}
		if name = accessor.GetName(); name == "" {
			return nil, errors.New("the object has no name (metadata.name or, to create, metadata.generateName)")
		}
		if res.Defaults != nil {
			res.Defaults(o)
		}
		first = false
	}
	options, err := optionsOf(r.Operation)
	if err != nil {
		return nil, err
	}
	switch {
	case r.Operation == admission.Create && res.PrepareCreate != nil:
		res.PrepareCreate(obj)
	case r.Operation == admission.Update && res.PrepareUpdate != nil:
		res.PrepareUpdate(obj, old)
	}
	u := r.User
	if u == nil {
		u = &user.DefaultInfo{}
	}
	return admission.NewAttributesRecord(obj, old, gvk, namespace, name, res.GVR, "", r.Operation, options, r.DryRun, u), nil
}

// optionsOf are the options the server admits a request of op with.
func optionsOf(op admission.Operation) (runtime.Object, error) {
	switch op {
	case admission.Create:
		return &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}}, nil
	case admission.Update:
		return &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}}, nil
	case admission.Delete:
		return &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}}, nil
	case admission.Connect:
		return nil, nil
	default:
		return nil, fmt.Errorf("operation %q: want CREATE, UPDATE, DELETE or CONNECT", op)
	}
}

// namespaceOf is the namespace of the request for an object: want, which
// the object's own must agree with, else the object's, else default, as
// kubectl sends it; none for a cluster-scoped kind.
func namespaceOf(res *registry.Resource, want string, o metav1.Object) (string, error) {
	own := o.GetNamespace()
	switch {
	case !res.Namespaced && want != "":
		return "", fmt.Errorf("namespace %q: %s is cluster-scoped", want, res.GVR.GroupResource())
	case !res.Namespaced:
		return "", nil
	case want == "" && own == "":
		return metav1.NamespaceDefault, nil
	case want == "":
		return own, nil
	case own != "" && own != want:
		return "", fmt.Errorf("namespace %q: the object is in namespace %q", want, own)
	default:
		return want, nil
	}
}

// Replicate puts obj into data where the server's replication would put
// it, data.kubernetes.<resource>[.<namespace>].<name>, as an object that
// exists in the cluster. Secrets are refused, as the server refuses to
// replicate them.
func (k *Kinds) Replicate(ctx context.Context, data *opa.Data, obj runtime.Object) error {
	res, _, err := k.resource(obj)
	if err != nil {
		return err
	}
	if res.GVR.Group == "" && res.GVR.Resource == "secrets" {
		return errors.New("secrets are never replicated to the policies' data")
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	ns, err := namespaceOf(res, "", accessor)
	if err != nil {
		return err
	}
	if accessor.GetName() == "" {
		return errors.New("an existing object needs metadata.name")
	}
	accessor.SetNamespace(ns)
	if res.Defaults != nil {
		res.Defaults(obj)
	}
	return data.Put(ctx, res.GVR.Resource, ns, accessor.GetName(), obj)
}

// ReplicateFile puts the objects of a file (a YAML stream of objects or
// of v1 Lists, as kubectl get -o yaml writes it) into data, as objects
// that exist in the cluster (Replicate). The file is read once: it may be
// a pipe.
func (k *Kinds) ReplicateFile(ctx context.Context, data *opa.Data, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	objs, err := k.decodeObjects(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, obj := range objs {
		if err := k.Replicate(ctx, data, obj); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

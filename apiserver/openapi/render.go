package openapi

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const bearerToken = "BearerToken"

// renderV2 writes the swagger 2.0 document: every route and definition.
func renderV2(routes []route, defs map[string]*spec.Schema, title, version string) ([]byte, error) {
	doc := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: title, Version: version}},
		Paths:       &spec.Paths{Paths: map[string]spec.PathItem{}},
		Definitions: spec.Definitions{},
		SecurityDefinitions: spec.SecurityDefinitions{bearerToken: &spec.SecurityScheme{SecuritySchemeProps: spec.SecuritySchemeProps{
			Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication",
		}}},
		Security: []map[string][]string{{bearerToken: {}}},
	}}
	for name, d := range defs {
		doc.Definitions[name] = *d
	}
	for _, rt := range routes {
		var item spec.PathItem
		for _, p := range rt.params {
			item.Parameters = append(item.Parameters, v2Param(p))
		}
		for _, op := range rt.ops {
			o := v2Operation(rt, op)
			switch op.method {
			case "get":
				item.Get = o
			case "put":
				item.Put = o
			case "post":
				item.Post = o
			case "patch":
				item.Patch = o
			case "delete":
				item.Delete = o
			}
		}
		doc.Paths.Paths[rt.path] = item
	}
	return json.Marshal(doc)
}

func v2Param(p param) spec.Parameter {
	return spec.Parameter{
		ParamProps:        spec.ParamProps{Name: p.name, In: p.in, Description: p.description, Required: p.required},
		SimpleSchema:      spec.SimpleSchema{Type: p.typ},
		CommonValidations: spec.CommonValidations{UniqueItems: true},
	}
}

func v2Operation(rt route, op operation) *spec.Operation {
	o := &spec.Operation{OperationProps: spec.OperationProps{
		Description: op.description,
		ID:          op.id,
		Tags:        []string{tag(rt.gv)},
		Schemes:     []string{"https"},
		Consumes:    []string{mediaAny},
		Produces:    responseMediaTypes(op.stream),
		Responses:   &spec.Responses{ResponsesProps: spec.ResponsesProps{StatusCodeResponses: map[int]spec.Response{}}},
	}}
	for _, p := range op.params {
		o.Parameters = append(o.Parameters, v2Param(p))
	}
	if op.body != nil {
		if op.body.patch {
			o.Consumes = patchMediaTypes()
		}
		o.Parameters = append(o.Parameters, spec.Parameter{ParamProps: spec.ParamProps{
			Name: "body", In: "body", Required: op.body.required, Schema: refSchema(flavorV2, op.body.model),
		}})
	}
	for _, r := range op.responses {
		resp := spec.Response{ResponseProps: spec.ResponseProps{Description: http.StatusText(r.code)}}
		if r.model != "" {
			resp.Schema = refSchema(flavorV2, r.model)
		}
		o.Responses.StatusCodeResponses[r.code] = resp
	}
	o.Responses.StatusCodeResponses[http.StatusUnauthorized] = spec.Response{ResponseProps: spec.ResponseProps{Description: http.StatusText(http.StatusUnauthorized)}}
	o.AddExtension(extAction, op.action)
	o.AddExtension(extGVK, gvkObject(op.gvk))
	return o
}

func refSchema(f flavor, name string) *spec.Schema {
	return &spec.Schema{SchemaProps: spec.SchemaProps{Ref: f.ref(name)}}
}

// renderV3 writes one group version's OpenAPI 3.0 document: its routes and
// the definitions they reach.
func renderV3(routes []route, defs map[string]*spec.Schema, title, version string) ([]byte, error) {
	doc := &spec3.OpenAPI{
		Version: "3.0.0",
		Info:    &spec.Info{InfoProps: spec.InfoProps{Title: title, Version: version}},
		Paths:   &spec3.Paths{Paths: map[string]*spec3.Path{}},
		Components: &spec3.Components{
			Schemas: map[string]*spec.Schema{},
			SecuritySchemes: spec3.SecuritySchemes{bearerToken: &spec3.SecurityScheme{SecuritySchemeProps: spec3.SecuritySchemeProps{
				Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication",
			}}},
		},
		SecurityRequirement: []map[string][]string{{bearerToken: {}}},
	}
	var roots []string
	for _, rt := range routes {
		item := &spec3.Path{}
		for _, p := range rt.params {
			item.Parameters = append(item.Parameters, v3Param(p))
		}
		for _, op := range rt.ops {
			o := v3Operation(rt, op)
			switch op.method {
			case "get":
				item.Get = o
			case "put":
				item.Put = o
			case "post":
				item.Post = o
			case "patch":
				item.Patch = o
			case "delete":
				item.Delete = o
			}
			if op.body != nil {
				roots = append(roots, op.body.model)
			}
			for _, r := range op.responses {
				if r.model != "" {
					roots = append(roots, r.model)
				}
			}
		}
		doc.Paths.Paths[rt.path] = item
	}
	for _, name := range reachable(roots, defs) {
		doc.Components.Schemas[name] = defs[name]
	}
	return json.Marshal(doc)
}

func v3Param(p param) *spec3.Parameter {
	return &spec3.Parameter{ParameterProps: spec3.ParameterProps{
		Name: p.name, In: p.in, Description: p.description, Required: p.required,
		Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{p.typ}, UniqueItems: true}},
	}}
}

func v3Operation(rt route, op operation) *spec3.Operation {
	o := &spec3.Operation{OperationProps: spec3.OperationProps{
		Description: op.description,
		OperationId: op.id,
		Tags:        []string{tag(rt.gv)},
		Responses:   &spec3.Responses{ResponsesProps: spec3.ResponsesProps{StatusCodeResponses: map[int]*spec3.Response{}}},
	}}
	for _, p := range op.params {
		o.Parameters = append(o.Parameters, v3Param(p))
	}
	if op.body != nil {
		types := []string{mediaAny}
		if op.body.patch {
			types = patchMediaTypes()
		}
		o.RequestBody = &spec3.RequestBody{RequestBodyProps: spec3.RequestBodyProps{
			Content: content(types, op.body.model), Required: op.body.required,
		}}
	}
	for _, r := range op.responses {
		resp := &spec3.Response{ResponseProps: spec3.ResponseProps{Description: http.StatusText(r.code)}}
		if r.model != "" {
			resp.Content = content(responseMediaTypes(op.stream), r.model)
		}
		o.Responses.StatusCodeResponses[r.code] = resp
	}
	o.Responses.StatusCodeResponses[http.StatusUnauthorized] = &spec3.Response{ResponseProps: spec3.ResponseProps{Description: http.StatusText(http.StatusUnauthorized)}}
	o.AddExtension(extAction, op.action)
	o.AddExtension(extGVK, gvkObject(op.gvk))
	return o
}

func content(mediaTypes []string, model string) map[string]*spec3.MediaType {
	out := make(map[string]*spec3.MediaType, len(mediaTypes))
	for _, mt := range mediaTypes {
		out[mt] = &spec3.MediaType{MediaTypeProps: spec3.MediaTypeProps{Schema: refSchema(flavorV3, model)}}
	}
	return out
}

// reachable lists, sorted, the definitions roots refer to, directly or
// through other definitions.
func reachable(roots []string, defs map[string]*spec.Schema) []string {
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		if d, ok := defs[name]; ok {
			walkRefs(d, visit)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// walkRefs calls visit with the definition name of every $ref in s.
func walkRefs(s *spec.Schema, visit func(name string)) {
	if s == nil {
		return
	}
	if ref := s.Ref.String(); ref != "" {
		visit(ref[strings.LastIndex(ref, "/")+1:])
	}
	for _, p := range s.Properties {
		walkRefs(&p, visit)
	}
	if s.Items != nil {
		walkRefs(s.Items.Schema, visit)
		for i := range s.Items.Schemas {
			walkRefs(&s.Items.Schemas[i], visit)
		}
	}
	if s.AdditionalProperties != nil {
		walkRefs(s.AdditionalProperties.Schema, visit)
	}
	for _, group := range [][]spec.Schema{s.AllOf, s.OneOf, s.AnyOf} {
		for i := range group {
			walkRefs(&group[i], visit)
		}
	}
	walkRefs(s.Not, visit)
}

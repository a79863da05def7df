package apiserver

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestListSemantics(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	cms := cs.CoreV1().ConfigMaps("default")
	var firstRV string
	for i := range 5 {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			firstRV = cm.ResourceVersion
		}
	}

	// Pages of two, all read at the revision of the first page, even
	// when objects change in between.
	var names []string
	opts := metav1.ListOptions{Limit: 2}
	pageRV := ""
	for page := 0; ; page++ {
		list, err := cms.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if page == 0 {
			pageRV = list.ResourceVersion
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p9-late"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if list.ResourceVersion != pageRV {
			t.Errorf("page %d at resourceVersion %s, want %s", page, list.ResourceVersion, pageRV)
		}
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		if list.Continue == "" {
			break
		}
		if len(list.Items) != 2 {
			t.Errorf("page %d has %d items, want 2", page, len(list.Items))
		}
		opts.Continue = list.Continue
	}
	if fmt.Sprint(names) != "[p0 p1 p2 p3 p4]" {
		t.Errorf("paged list %v, want p0..p4 in order", names)
	}

	// Without a resourceVersion the list sees every write before it.
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 6 {
		t.Errorf("consistent list: %d items, err %v; want 6", len(list.Items), err)
	}
	if list, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil || len(list.Items) == 0 {
		t.Errorf("list at resourceVersion 0: %v", err)
	}
	exact, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: firstRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || len(exact.Items) != 1 || exact.ResourceVersion != firstRV {
		t.Errorf("exact list at %s: %d items at %s, err %v; want p0 alone", firstRV, len(exact.Items), exact.ResourceVersion, err)
	}
	c := ts.httpClient(t, admin)
	// client-go retries this answer; a raw request sees it.
	rv, _ := strconv.ParseInt(list.ResourceVersion, 10, 64)
	resp, err := c.Get(ts.url + "/api/v1/namespaces/default/configmaps?resourceVersionMatch=NotOlderThan&resourceVersion=" + strconv.FormatInt(rv+1000, 10))
	if err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, resp); resp.StatusCode != http.StatusGatewayTimeout || st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("list at a future resourceVersion: %d %+v, want 504 with cause ResourceVersionTooLarge and Retry-After", resp.StatusCode, st)
	}

	for _, tt := range []struct {
		query string
		code  int
	}{
		{"continue=not-base64!", 400},
		{"continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIvZXRjIn0", 400},
		{"resourceVersionMatch=Exact", 422},
		{"resourceVersionMatch=Sometimes&resourceVersion=5", 422},
		{"limit=-1", 400},
		{"resourceVersion=abc", 400},
	} {
		resp, err := c.Get(ts.url + "/api/v1/namespaces/default/configmaps?" + tt.query)
		if err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, resp); resp.StatusCode != tt.code {
			t.Errorf("?%s: %d %s, want %d", tt.query, resp.StatusCode, st.Message, tt.code)
		}
	}
}

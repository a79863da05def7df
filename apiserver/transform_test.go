package apiserver

import (
	"bufio"
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

func TestTablesForGetListAndWatch(t *testing.T) {
	ts := startServer(t)
	cs := ts.clientset(t, admin)
	ctx := testContext(t)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "t1"}, Data: map[string]string{"a": "1", "b": "2"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c := ts.httpClient(t, admin)
	get := func(path, accept string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, ts.url+path, nil)
		req.Header.Set("Accept", accept)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, path := range []string{"/api/v1/namespaces/default/configmaps", "/api/v1/configmaps", "/api/v1/namespaces/default/configmaps/t1"} {
		resp := get(path, tableAccept)
		var table metav1.Table
		err := json.NewDecoder(resp.Body).Decode(&table)
		resp.Body.Close()
		if err != nil || table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
			t.Fatalf("GET %s: %v %s/%s, want a meta.k8s.io/v1 Table", path, err, table.APIVersion, table.Kind)
		}
		if len(table.ColumnDefinitions) == 0 || table.ColumnDefinitions[0].Name != "Name" || table.ColumnDefinitions[1].Name != "Data" {
			t.Errorf("GET %s: columns %+v, want Name, Data, Age", path, table.ColumnDefinitions)
		}
		if len(table.Rows) != 1 || table.Rows[0].Cells[0] != "t1" || table.Rows[0].Cells[1] != float64(2) || table.ResourceVersion == "" {
			t.Errorf("GET %s: rows %+v at %q, want t1 with 2 keys", path, table.Rows, table.ResourceVersion)
		}
		var partial metav1.PartialObjectMetadata
		if len(table.Rows) == 1 {
			if err := json.Unmarshal(table.Rows[0].Object.Raw, &partial); err != nil || partial.Namespace != "default" || partial.Kind != "PartialObjectMetadata" {
				t.Errorf("GET %s: row object %s, want PartialObjectMetadata in default", path, table.Rows[0].Object.Raw)
			}
		}
	}
	// Protobuf tables are not served; the client's JSON fallback is.
	resp := get("/api/v1/namespaces/default/configmaps", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json")
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("protobuf table: content type %q, want the JSON fallback", resp.Header.Get("Content-Type"))
	}
	resp = get("/api/v1/namespaces/default/configmaps", "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io")
	var pl metav1.PartialObjectMetadataList
	json.NewDecoder(resp.Body).Decode(&pl)
	resp.Body.Close()
	if pl.Kind != "PartialObjectMetadataList" || len(pl.Items) != 1 || pl.Items[0].Name != "t1" {
		t.Errorf("partial metadata list: %+v", pl)
	}
	resp = get("/api/v1/namespaces/default/configmaps", "application/json;as=Gadget;v=v1;g=meta.k8s.io")
	if st := statusOf(t, resp); resp.StatusCode != http.StatusNotAcceptable {
		t.Errorf("unknown transformation: %d %s, want 406", resp.StatusCode, st.Message)
	}

	list, _ := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	watchResp := get("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="+list.ResourceVersion, tableAccept)
	defer watchResp.Body.Close()
	for _, n := range []string{"t2", "t3"} {
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(watchResp.Body)
	for i, n := range []string{"t2", "t3"} {
		if !sc.Scan() {
			t.Fatalf("watch ended: %v", sc.Err())
		}
		var ev struct {
			Type   string       `json:"type"`
			Object metav1.Table `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "ADDED" || ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 || ev.Object.Rows[0].Cells[0] != n {
			t.Errorf("watch event %d: %s", i, sc.Text())
		}
		if headers := len(ev.Object.ColumnDefinitions) > 0; headers != (i == 0) {
			t.Errorf("watch event %d has column definitions: %t, want only the first", i, headers)
		}
	}
}

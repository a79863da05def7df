// Package printers renders API objects as meta.k8s.io/v1 Tables, the
// server-side printing kubectl asks for with
//
//	Accept: application/json;as=Table;v=v1;g=meta.k8s.io
//
// kubectl has no printers of its own for built-in kinds: whatever columns
// the server sends are what `kubectl get` shows. So the columns and cells
// here follow kube-apiserver's printers (k8s.io/kubernetes/pkg/printers/
// internalversion) as closely as we can without importing them: the same
// column names, types, priorities and descriptions, and the same cell
// values, including kube's quirks (a Pod's RESTARTS is a string such as
// "3 (5m ago)", a Deployment's UP-TO-DATE column is declared "string" but
// holds an integer).
//
// Like kube-apiserver, Table always renders the wide (-o wide) columns;
// kubectl hides those with Priority 1 unless asked. Kinds kube prints with
// its default table (Role, ClusterRole, and anything this package does not
// know) get the columns Name and Created At.
//
// Usage, in a list handler that negotiated a Table:
//
//	table, err := printers.Table(list, opts.NoHeaders, time.Now())
//	if err != nil {
//		// the object has no metadata: answer 406 Not Acceptable
//	}
//	// encode table as JSON
//
// The Table shares maps and slices with the object it was made from; treat
// both as read-only until the Table has been written.
package printers

package storage

// SetListPageSize makes c list n objects at a time, so that tests can list
// many pages of few objects. It must be called before Run.
func SetListPageSize(c *Cacher, n int64) { c.pageSize = n }

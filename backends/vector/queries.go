package vector

import "fmt"

// columns is the select list shared by Hydrate and Scan, matching scanDoc.
const columns = "id, tenant, title, text, metadata, entities, links, embedding, updated_at"

// queries holds the SQL that depends only on the table name.
type queries struct {
	hydrate    string
	scan       string
	indexState string
}

func buildQueries(table, meta string) queries {
	return queries{
		indexState: fmt.Sprintf(`SELECT value FROM %s WHERE key = $1`, meta),
		hydrate:    fmt.Sprintf(`SELECT %s FROM %s WHERE id = ANY($1)`, columns, table),
		scan:       fmt.Sprintf(`SELECT %s FROM %s WHERE id > $1 ORDER BY id LIMIT $2`, columns, table),
	}
}

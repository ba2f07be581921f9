package vector

import "fmt"

// columns is the select list shared by Hydrate and Scan, matching scanDoc.
const columns = "id, tenant, title, text, metadata, entities, links, embedding, updated_at"

// queries holds the SQL that depends only on the table name.
type queries struct {
	hydrate string
	scan    string
}

func buildQueries(table, op string) queries {
	return queries{
		hydrate: fmt.Sprintf(`SELECT %s FROM %s WHERE id = ANY($1)`, columns, table),
		scan:    fmt.Sprintf(`SELECT %s FROM %s WHERE id > $1 ORDER BY id LIMIT $2`, columns, table),
	}
}

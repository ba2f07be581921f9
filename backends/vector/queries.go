package vector

import "fmt"

// columns is the select list shared by Hydrate and Scan, matching scanDoc.
const columns = "id, tenant, title, text, metadata, entities, links, embedding, updated_at"

// queries holds the SQL that depends only on the table name.
type queries struct {
	upsert     string // one row, $1..$9 in columns order
	createTemp string
	mergeTemp  string
	delete     string
	hydrate    string
	scan       string
}

func buildQueries(table, op string) queries {
	const set = `tenant = EXCLUDED.tenant, title = EXCLUDED.title, text = EXCLUDED.text,
	metadata = EXCLUDED.metadata, entities = EXCLUDED.entities, links = EXCLUDED.links,
	embedding = EXCLUDED.embedding, updated_at = EXCLUDED.updated_at`
	return queries{
		upsert: fmt.Sprintf(`INSERT INTO %s (%s) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET %s`, table, columns, set),
		createTemp: fmt.Sprintf(`CREATE TEMP TABLE ragd_upsert (LIKE %s INCLUDING DEFAULTS) ON COMMIT DROP`, table),
		mergeTemp: fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM ragd_upsert
ON CONFLICT (id) DO UPDATE SET %s`, table, columns, columns, set),
		delete:  fmt.Sprintf(`DELETE FROM %s WHERE id = ANY($1)`, table),
		hydrate: fmt.Sprintf(`SELECT %s FROM %s WHERE id = ANY($1)`, columns, table),
		scan:    fmt.Sprintf(`SELECT %s FROM %s WHERE id > $1 ORDER BY id LIMIT $2`, columns, table),
	}
}

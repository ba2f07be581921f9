-- Run once by the pgvector/pgvector image on an empty data volume
-- (docker-compose.yml mounts it into /docker-entrypoint-initdb.d).
CREATE EXTENSION IF NOT EXISTS vector;
\connect postgres
CREATE EXTENSION IF NOT EXISTS vector;

-- Issue 19: each sandbox's audit chain head, written in the transaction
-- that appends the entry. The next append links after this head, not after
-- whatever exec_log's newest row is, and audit verify compares the chain
-- it reads with it: rows removed from the end of a chain (which leave a
-- shorter chain that still links up) show as a gap, as removed rows in
-- the middle do through their sequence numbers.
--
-- Like exec_log, no foreign key to sandboxes: the head is evidence too.

CREATE TABLE exec_log_heads (
    sandbox_id TEXT PRIMARY KEY,
    seq        BIGINT NOT NULL,
    row_hash   TEXT NOT NULL
);

INSERT INTO exec_log_heads (sandbox_id, seq, row_hash)
SELECT e.sandbox_id, e.seq, e.row_hash FROM exec_log e
WHERE e.seq = (SELECT MAX(x.seq) FROM exec_log x WHERE x.sandbox_id = e.sandbox_id);

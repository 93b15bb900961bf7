package storage

// Delivery ids. Lists show deliveries newest first by id, so ids must
// follow arrival across every process writing to one store: the one that
// owns the inbox (its ids are handed out when a request is appended,
// before the row exists in SQLite) and any other inserting directly (a
// second listener, an import). Each takes its ids from one counter that
// all of them share: an 8-byte file, <store>-ids, mapped into each
// process's memory and incremented atomically. The counter need not be
// durable: every open raises it above the highest id stored or moved (the
// inbox is recovered first), so after a power cut it can only have fallen
// back to ids that were never acknowledged.
//
// Where files cannot be mapped (not Unix) there is no inbox either, and a
// direct insert takes the id above the highest stored one inside its
// transaction.

// idSource hands out delivery ids in increasing order.
type idSource interface {
	// next returns a fresh id.
	next() int64
	// raise makes every later id greater than floor.
	raise(floor int64)
	close() error
}

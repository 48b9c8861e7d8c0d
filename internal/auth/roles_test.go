package auth

// testRoles stand for what a server puts in force (SetRoles: its routes
// table's roles and the health and reflection services it mounts): the
// contract's roles of the procedures these tests call.
var testRoles = Roles{
	"/seqsvr.v1.AllocService/NextIDs":        Client,
	"/seqsvr.v1.SeqService/NextSeq":          Client,
	"/seqsvr.v1.StoreService/GetTag":         Client,
	"/seqsvr.v1.StoreService/ClusterStatus":  Client,
	"/seqsvr.v1.StoreService/ReserveSegment": Alloc,
	"/seqsvr.v1.StoreService/RenewWorker":    Alloc,
	"/seqsvr.v1.StoreService/CreateTag":      Admin,
	"/seqsvr.v1.StoreService/DeleteTag":      Admin,
	"/seqsvr.v1.StoreService/RemoveMember":   Admin,
	"/grpc.health.v1.Health/Check":           Open,
}

// need is the role PathRole gives path under testRoles.
func need[T string | []byte](path T) Role {
	r, _ := PathRole(testRoles, path)
	return r
}

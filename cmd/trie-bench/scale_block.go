package main

import (
	"encoding/binary"

	"github.com/hexstate/hexstate/hashkey"
	"github.com/holiman/uint256"
)

// scaleBlockCfg is the per-block traffic of the scale workload.
type scaleBlockCfg struct {
	accWrites, slotWrites int // account updates (nonce, balance) and slot writes
	accReads, slotReads   int // reads of accounts and slots the block does not write
}

// scaleAccOp sets account idx's nonce and balance (code and storage stay).
type scaleAccOp struct {
	idx     int32
	addr    [20]byte
	hash    hashkey.Hash
	nonce   uint64
	balance uint256.Int
}

// scaleSlotOp writes (or, zero, deletes) a slot of contract idx; as a read op
// val is unused.
type scaleSlotOp struct {
	idx  int32
	addr [20]byte
	hash hashkey.Hash // keccak(addr)
	key  [32]byte
	slot hashkey.Hash // keccak(key)
	val  uint256.Int
}

// scaleBlock is one block's ops, generated from (seed, block number).
type scaleBlock struct {
	number   uint64
	accReads []scaleAccOp // only idx, addr, hash set
	slotRead []scaleSlotOp
	accOps   []scaleAccOp
	slotOps  []scaleSlotOp
}

// genScaleBlock draws block n: account writes uniform over all accounts;
// slot traffic 40% on the hot (large and giant) contracts, 60% uniform over
// contracts; of the slot writes 15% delete an initial slot (never slot 0, so no
// storage empties), 25% create a new slot, 60% overwrite an initial slot.
// Values are absolute (nonce: the initial nonce plus n), so no model is needed.
func genScaleBlock(s scaleShape, hot []int32, c scaleBlockCfg, n uint64) *scaleBlock {
	b := &scaleBlock{number: n}
	k := uint64(0)
	next := func() uint64 { k++; return mix(s.seed, tagBlock, n, k) }
	pickAcc := func() int { return int(next() % uint64(s.accounts)) }
	pickContract := func() int {
		if len(hot) > 0 && next()%10 < 4 {
			return int(hot[next()%uint64(len(hot))])
		}
		return 10 * int(next()%uint64(s.contracts()))
	}
	acc := func(i int) scaleAccOp {
		a := s.address(i)
		return scaleAccOp{idx: int32(i), addr: a, hash: hashkey.Keccak256(a[:])}
	}
	slot := func(i int, key [32]byte) scaleSlotOp {
		a := s.address(i)
		return scaleSlotOp{idx: int32(i), addr: a, hash: hashkey.Keccak256(a[:]), key: key, slot: hashkey.Keccak256(key[:])}
	}
	for range c.accReads {
		b.accReads = append(b.accReads, acc(pickAcc()))
	}
	for range c.slotReads {
		i := pickContract()
		b.slotRead = append(b.slotRead, slot(i, s.slotKey(i, int(next()%uint64(s.slotCount(i))))))
	}
	for range c.accWrites {
		i := pickAcc()
		op := acc(i)
		nonce, _, _ := s.account(i)
		op.nonce = nonce + n
		op.balance.SetUint64(1 + next()%(1<<62))
		b.accOps = append(b.accOps, op)
	}
	for range c.slotWrites {
		i := pickContract()
		cnt := s.slotCount(i)
		var op scaleSlotOp
		switch x := next() % 20; {
		case x < 3 && cnt > 1: // delete an initial slot (maybe deleted already)
			op = slot(i, s.slotKey(i, 1+int(next()%uint64(cnt-1))))
		case x < 8: // a new slot
			var key [32]byte
			fill32(key[:], s.seed, tagBlock, n, k, 0x6e6577)
			op = slot(i, key)
			op.val = nonZeroValue(next())
		default: // overwrite an initial slot
			op = slot(i, s.slotKey(i, int(next()%uint64(cnt))))
			op.val = nonZeroValue(next())
		}
		b.slotOps = append(b.slotOps, op)
	}
	return b
}

// readDigest folds the values a block read into one word, so that the
// implementations can be checked to have read the same state.
type readDigest uint64

func (d *readDigest) account(nonce uint64, balance *uint256.Int) {
	*d = readDigest(mix(uint64(*d), nonce, words32(balance.Bytes32())))
}

func (d *readDigest) slot(v *uint256.Int) {
	*d = readDigest(mix(uint64(*d), 0x736c6f74, words32(v.Bytes32())))
}

// words32 hashes 32 bytes to a word.
func words32(b [32]byte) uint64 {
	return mix(binary.BigEndian.Uint64(b[0:]), binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[16:]), binary.BigEndian.Uint64(b[24:]))
}

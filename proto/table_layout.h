// The mapping table: one region holding a whole Redis keyspace snapshot, laid
// out so that a reader that knows only the region's length can find and
// validate every record with reads at computed offsets. Layout 6 streams: an
// epoch is published while its records are still being written, and its
// header always describes the complete prefix (docs/mapping-table.md).
//
// All integers are little-endian. Regions start on 4096-byte boundaries.
//
//   offset 0        4096 (scripts_offset)  slots_offset              heap_offset    dbdir_offset
//   +---------------+----------------------+-------------------------+--------------+-----------+
//   | TableHeader   | scripts (functions,  | slot 0, 1, ... N-1      | heap (records| DbEntry x |
//   | (512 B, page) | Lua scripts, hash    | (slot_size bytes each), | too big for a| db_count  |
//   |               | slots; may be none)  | then room up to         | slot), then  | (ready    |
//   |               |                      | slot_capacity slots     | room         | only)     |
//   +---------------+----------------------+-------------------------+--------------+-----------+
//                                          slot i at slots_offset + i*slot_size     total_size ^
//
// A table is written front to back while the snapshot streams in: the
// scripts region first (an RDB carries functions and Lua scripts before its
// keys), then records into their slots and the heap, then, once complete, the
// DB directory after the heap. The header is rewritten as records complete;
// a reader trusts only a header whose CRC verifies (a copy taken while it was
// rewritten does not) and reads only records below its record_count, whose
// heap bytes all lie below its heap_size.
//
// TableHeader (512 bytes)
//    0  8  magic "RRSTABLE"           128  8  slots_size  (= slot_count * slot_size)
//    8  2  layout_version (6)         136  8  heap_offset
//   10  2  header_size (512)          144  8  heap_size (heap bytes complete)
//   12  4  state (State)              152  8  source_offset (replication offset; 0 = scan)
//   16  8  epoch                      160 40  source_replid (ASCII; zeros = scan)
//   24  8  created_unix_ms            200  4  dbdir_crc32c (over the whole DbEntry array)
//   32 32  server_version (ASCII)     204  4  source kind (1 scan, 2 psync, 3 RDB file)
//   64  4  rdb_version (see below)    208  8  scripts_offset (0 when scripts_size is 0)
//   68  4  db_count (0 until ready)   216  8  scripts_size (0: no functions, no scripts)
//   72  8  record_count (complete)    224  4  scripts_crc32c (over the whole region)
//   80  8  total_size                 228  1  engine (1 Redis, 2 Valkey, 0 unknown)
//   88  4  slot_size                  229  3  reserved, zero
//   92  4  slot_header_size (48)      232  4  module_aux_count (module data not carried)
//   96  8  slot_count (= record_count)236  8  empty_skipped (empty collections dropped)
//                                     244  4  source_stream_db (the stream's DB at the offset)
//                                     248  8  keys_lost (listed by the source, not copied)
//  104  8  dbdir_offset (0 until ready)
//  112  8  dbdir_size (= db_count * 32)
//  120  8  slots_offset
//  256 64  lossy records: 4 entries of 16 bytes, entry i for rdb::Loss bit
//          1 << i: 0 8 count, 8 8 first_slot (0 when count is 0). Records
//          holding something a conversion to RDB 10 (Redis 7.0) cannot carry
//          (field TTLs, stream consumers' active times): a client refuses a
//          lossy conversion, naming the first key.
//  320  8  slot_capacity (slots there is room for at slots_offset)
//  328  8  heap_capacity (heap bytes there is room for; = heap_size once ready)
//  336 64  broken_reason (ASCII, zero padded; state broken only)
//  400 108 reserved, zero
//  508  4  header_crc32c (over bytes 0..507)
//
// While building (and broken) total_size is the end of the heap's room and
// there is no DB directory; once ready it is the end of the DB directory.
//
// DbEntry (32 bytes), sorted by db, one per non-empty DB. Records are sorted
// by DB, so DB d owns slots [first_slot, first_slot + key_count).
//    0  4  db        4  4  reserved    8  8  first_slot   16  8  key_count   24  8  expires_count
//
// Slot (slot_size bytes; a 48-byte header, then inline data, zero padded)
//    0  4  record_crc32c: over slot bytes 4..47, then the key, then the payload
//    4  1  kind (1 inline: key+payload follow the header; 2 heap: they sit in
//             the heap at heap_ref, key first)
//    5  3  reserved
//    8  4  db
//   12  4  key_len
//   16  8  payload_len (a Redis DUMP payload: type byte, RDB value, 2-byte RDB
//             version, 8-byte CRC64, so RESTORE takes it as is)
//   24  8  expire_at_ms (absolute unix ms; -1 = no expiry)
//   32  8  heap_ref (offset from heap_offset; 0 when inline)
//   40  8  reserved
//
// Heap records are 8-byte aligned and appear in slot order, so the heap can be
// streamed front to back while walking the slots.
//
// Scripts region: what a replica holds besides its keys, as a sequence of
// entries, each 8-byte aligned (its data zero padded to a multiple of 8):
//    0  1  kind (1 functions: exactly what FUNCTION DUMP returned, `count`
//             libraries, at most one such entry; 2 Lua: one script body for
//             SCRIPT LOAD, count 1; 3 hash slots: the cluster slots the
//             source's shard served when the table was taken, a 2048-byte
//             bitmap (slot s is bit s % 8 of byte s / 8), `count` slots set,
//             at most one such entry, none when the source was no cluster
//             node; added in layout 5)
//    1  3  reserved
//    4  4  count
//    8  8  len
//   16 ..  len bytes of data, then zero padding
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/status.h"
#include "proto/server_version.h"
#include "proto/slot_ranges.h"

namespace rrs::table {

inline constexpr char kMagic[8] = {'R', 'R', 'S', 'T', 'A', 'B', 'L', 'E'};
inline constexpr uint16_t kLayoutVersion = 6;
inline constexpr size_t kHeaderSize = 512;
inline constexpr size_t kDbEntrySize = 32;
inline constexpr size_t kSlotHeaderSize = 48;
inline constexpr size_t kRegionAlign = 4096;
inline constexpr size_t kHeapAlign = 8;
// Slot sizes are multiples of 64 (cache line) between these bounds; larger
// records go to the heap.
inline constexpr uint32_t kSlotAlign = 64;
inline constexpr uint32_t kMinSlotSize = 64;
inline constexpr uint32_t kMaxSlotSize = 64 * 1024;
// Redis limits keys to 512 MiB; a DUMP payload is a type byte, at least one
// value byte, 2 bytes of RDB version and 8 of CRC64.
inline constexpr uint64_t kMaxKeyLen = 512ull << 20;
inline constexpr uint64_t kMinPayloadLen = 1 + 1 + 2 + 8;
inline constexpr int64_t kNoExpiry = -1;
inline constexpr uint32_t kMaxDbCount = 1u << 20;
// Scripts region entries: a 16-byte header, data padded to 8 bytes.
inline constexpr size_t kScriptEntryHeaderSize = 16;
inline constexpr size_t kScriptAlign = 8;
// FUNCTION DUMP's reply and each script body are one Redis bulk string each
// (proto-max-bulk-len, 512 MiB by default), and a client holds the region in
// memory whole; a region claiming more than this is garbage.
inline constexpr uint64_t kMaxScriptsSize = 1ull << 30;
// A FUNCTION DUMP payload ends like a DUMP payload: 2 bytes of RDB version and
// 8 of CRC64, after at least one library.
inline constexpr uint64_t kMinFunctionPayloadLen = 2 + 8 + 1;
// Entries of the header's lossy-records array, one per rdb::Loss bit.
inline constexpr size_t kLossKinds = 4;
// The hash slots entry: one bit per cluster slot.
inline constexpr size_t kHashSlotBitmapSize = kHashSlots / 8;
static_assert(kHashSlotBitmapSize % kScriptAlign == 0);

static_assert(kHeaderSize <= kRegionAlign);
static_assert(kSlotHeaderSize % 8 == 0 && kMinSlotSize > kSlotHeaderSize);
static_assert(kMaxSlotSize % kSlotAlign == 0 && kMinSlotSize % kSlotAlign == 0);
static_assert(kScriptEntryHeaderSize % kScriptAlign == 0 && kRegionAlign % kScriptAlign == 0);

// Byte offsets of header fields, spelled out so the encoder, the decoder and
// the drawing above cannot drift apart.
namespace hdr {
inline constexpr size_t kMagic = 0, kLayoutVersion = 8, kHeaderSize = 10, kState = 12, kEpoch = 16,
                        kCreatedMs = 24, kServerVersion = 32, kRdbVersion = 64, kDbCount = 68,
                        kRecordCount = 72, kTotalSize = 80, kSlotSize = 88, kSlotHeaderSize = 92,
                        kSlotCount = 96, kDbdirOffset = 104, kDbdirSize = 112, kSlotsOffset = 120,
                        kSlotsSize = 128, kHeapOffset = 136, kHeapSize = 144, kSourceOffset = 152,
                        kSourceReplid = 160, kDbdirCrc = 200, kSourceKind = 204,
                        kScriptsOffset = 208, kScriptsSize = 216, kScriptsCrc = 224, kEngine = 228,
                        kModuleAux = 232, kEmptySkipped = 236, kStreamDb = 244, kKeysLost = 248,
                        kLossy = 256, kSlotCapacity = 320, kHeapCapacity = 328, kBrokenReason = 336,
                        kReserved2 = 400, kHeaderCrc = 508;
inline constexpr size_t kServerVersionLen = 32, kReplidLen = 40, kLossyEntrySize = 16,
                        kBrokenReasonLen = 64, kReserved2Len = 108;
static_assert(kServerVersion + kServerVersionLen == kRdbVersion);
static_assert(kSourceReplid + kReplidLen == kDbdirCrc);
static_assert(kSourceKind + 4 == kScriptsOffset && kScriptsOffset + 8 == kScriptsSize &&
              kScriptsSize + 8 == kScriptsCrc && kScriptsCrc + 4 == kEngine);
static_assert(kEngine + 4 == kModuleAux && kModuleAux + 4 == kEmptySkipped &&
              kEmptySkipped + 8 == kStreamDb && kStreamDb + 4 == kKeysLost);
static_assert(kKeysLost + 8 == kLossy);
static_assert(kLossy + kLossKinds * kLossyEntrySize == kSlotCapacity);
static_assert(kSlotCapacity + 8 == kHeapCapacity && kHeapCapacity + 8 == kBrokenReason);
static_assert(kBrokenReason + kBrokenReasonLen == kReserved2);
static_assert(kReserved2 + kReserved2Len == kHeaderCrc);
static_assert(kHeaderCrc + 4 == rrs::table::kHeaderSize);
}  // namespace hdr

namespace slot {
inline constexpr size_t kCrc = 0, kKind = 4, kDb = 8, kKeyLen = 12, kPayloadLen = 16,
                        kExpireAt = 24, kHeapRef = 32, kReserved = 40;
static_assert(kReserved + 8 == kSlotHeaderSize);
}  // namespace slot

namespace script {
inline constexpr size_t kKind = 0, kReserved = 1, kCount = 4, kLen = 8;
static_assert(kReserved + 3 == kCount && kLen + 8 == kScriptEntryHeaderSize);
}  // namespace script

enum class State : uint32_t {
  // Being written: records [0, record_count) and heap bytes [0, heap_size)
  // are complete and never change; more come.
  kBuilding = 1,
  kReady = 2,  // complete and immutable for the life of this epoch
  // The snapshot broke off (broken_reason says why): what is there is
  // intact, but the rest will never come.
  kBroken = 3,
};

enum class SourceKind : uint32_t {
  kScan = 1,   // SCAN + DUMP: not a point-in-time snapshot
  kPsync = 2,  // the master's RDB stream, consistent as of source_offset
  // An RDB file (a backup): consistent as of source_offset when the file
  // carried its server's replication ID and offset (repl-id, repl-offset),
  // else of no known place in any history (source_replid empty). Never has a
  // change log.
  kRdbFile = 3,
};

// "scan", "psync", "rdb": as rdma-server's --source names it.
const char* source_name(SourceKind kind);

enum class SlotKind : uint8_t {
  kInline = 1,
  kHeap = 2,
};

enum class ScriptKind : uint8_t {
  kFunctions = 1,  // a FUNCTION DUMP payload: FUNCTION RESTORE takes it as is
  kLua = 2,        // one Lua script body (from a pre-7.0 master's RDB): SCRIPT LOAD
  kHashSlots = 3,  // the cluster slots the source's shard served (a bitmap)
};

// How many records hold one kind of content an older server has no place
// for, and the first one's slot.
struct LossyRecords {
  uint64_t count = 0;
  uint64_t first_slot = 0;  // 0 when count is 0
};

struct Header {
  uint16_t layout_version = kLayoutVersion;
  State state = State::kBuilding;
  uint64_t epoch = 0;
  uint64_t created_unix_ms = 0;
  // Which server the data came from: its engine and version ("8.0.6").
  Engine engine = Engine::kUnknown;
  std::string server_version;  // at most 32 bytes
  // The RDB version that says what the payloads' type numbers mean: the
  // master's RDB header (psync), or the payloads' own (scan). 0: no data.
  uint32_t rdb_version = 0;
  // What the source held that the table does not: module data that is not
  // a key (MODULE_AUX), and empty collections (which servers drop at load).
  uint32_t module_aux_count = 0;
  uint64_t empty_skipped = 0;
  // Keys the source listed and could not copy (scan: a DUMP that failed with
  // an error other than NOPERM, which stops the snapshot instead). Bytes
  // 248..255 were reserved in layout 4 and readers refuse nonzero reserved
  // bytes, so a reader that predates the field refuses a table missing keys.
  uint64_t keys_lost = 0;
  // Records a conversion to an older server would lose part of, per kind
  // (entry i: rdb::Loss bit 1 << i).
  std::array<LossyRecords, kLossKinds> lossy{};
  uint32_t db_count = 0;
  uint64_t record_count = 0;
  uint64_t total_size = 0;
  uint32_t slot_size = 0;
  uint64_t slot_count = 0;
  uint64_t dbdir_offset = 0, dbdir_size = 0;
  uint64_t slots_offset = 0, slots_size = 0;
  uint64_t heap_offset = 0, heap_size = 0;
  // Room for this many slots, and heap bytes, at slots_offset and heap_offset.
  uint64_t slot_capacity = 0, heap_capacity = 0;
  std::string broken_reason;  // state kBroken only; at most 64 bytes
  SourceKind source_kind = SourceKind::kScan;
  uint64_t source_offset = 0;
  std::string source_replid;  // at most 40 bytes
  // The DB the master's replication stream had selected at source_offset:
  // the stream after it may go on without a SELECT (an RDB file's
  // repl-stream-db; for psync from a replica too, whose stream need not
  // begin with a SELECT).
  uint32_t source_stream_db = 0;
  uint32_t dbdir_crc32c = 0;
  uint64_t scripts_offset = 0, scripts_size = 0;  // both 0: no scripts region
  uint32_t scripts_crc32c = 0;

  uint64_t slot_offset(uint64_t i) const { return slots_offset + i * slot_size; }
};

struct DbEntry {
  uint32_t db = 0;
  uint64_t first_slot = 0;
  uint64_t key_count = 0;
  uint64_t expires_count = 0;
};

// A decoded slot header. Key and payload are views into the slot (inline) or
// empty until the heap bytes are fetched (heap).
struct SlotView {
  uint32_t crc32c = 0;
  SlotKind kind = SlotKind::kInline;
  uint32_t db = 0;
  uint32_t key_len = 0;
  uint64_t payload_len = 0;
  int64_t expire_at_ms = kNoExpiry;
  uint64_t heap_ref = 0;
  std::string_view key;
  std::string_view payload;

  // Cannot wrap for a view decode_slot accepted (it checks the sum first).
  uint64_t data_len() const { return key_len + payload_len; }
};

// The scripts region: what a replica needs besides its keys.
struct Scripts {
  // Exactly what FUNCTION DUMP returned on the master, holding
  // `function_libraries` libraries; empty when it had none.
  std::string function_payload;
  uint32_t function_libraries = 0;
  // Script bodies a pre-7.0 master shipped in its RDB ("lua" aux fields).
  std::vector<std::string> lua_scripts;
  // The cluster hash slots the source's shard served when the table was
  // taken (a client loading every shard checks they cover each slot once);
  // nullopt when the source was not a cluster node.
  std::optional<SlotRanges> hash_slots;

  bool empty() const { return function_payload.empty() && lua_scripts.empty() && !hash_slots; }
};

// --- Encoding (the server) -------------------------------------------------

// Geometry of a table whose records are still to come: the scripts region
// (scripts_bytes, 0: none) after the header page, room for `slot_capacity`
// slots of h.slot_size, then `heap_capacity` heap bytes. Fills the offset and
// size fields of `h` for a table with no records yet (total_size: the end of
// the heap's room).
Status plan_streamed(Header& h, uint64_t scripts_bytes, uint64_t slot_capacity,
                     uint64_t heap_capacity);
// The last step of a streamed table: with record_count, heap_size and
// db_count set, sets the slot and heap fields to match and puts the DB
// directory right after the heap; total_size becomes its end.
void plan_completion(Header& h);
// Geometry of a complete table for `record_count` records in `db_count` DBs
// with the given slot size, heap bytes and scripts region bytes (0: none),
// without room to spare; fills the offset/size fields of `h`.
Status plan_geometry(Header& h, uint64_t heap_bytes, uint64_t scripts_bytes = 0);

// Writes the 512-byte header (computing its CRC) into `out`.
void encode_header(const Header& h, std::span<std::byte, kHeaderSize> out);
void encode_db_entry(const DbEntry& e, std::span<std::byte, kDbEntrySize> out);

// Record bytes as they are stored: fills the slot header (computing the CRC
// over it, the key and the payload) and, for inline records, copies key and
// payload after it (they may already be there: a builder writes them in
// place). `slot` is exactly slot_size bytes.
struct RecordIn {
  uint32_t db = 0;
  std::string_view key;
  std::string_view payload;
  int64_t expire_at_ms = kNoExpiry;
};
void encode_inline_slot(const RecordIn& r, std::span<std::byte> slot);
void encode_heap_slot(const RecordIn& r, uint64_t heap_ref, std::span<std::byte> slot);
bool fits_inline(uint32_t slot_size, uint64_t key_len, uint64_t payload_len);
uint64_t heap_footprint(uint64_t key_len, uint64_t payload_len);  // aligned bytes in the heap

// Bytes of the scripts region for `s` (0 when it carries nothing). A function
// entry is written when function_payload is not empty.
uint64_t scripts_region_size(const Scripts& s);
// Writes the region into `out` (exactly scripts_region_size(s) bytes) and
// returns its CRC-32C, for the header's scripts_crc32c.
uint32_t encode_scripts(const Scripts& s, std::span<std::byte> out);

// --- Decoding (the client). No I/O; every field is untrusted. --------------

// Parses and validates a header read from a remote table of `region_len`
// bytes, in any state: the caller decides what a table still being built
// (or broken) is good for.
Result<Header> decode_header(std::span<const std::byte> bytes, uint64_t region_len);

// Parses the DB directory (dbdir_size bytes at dbdir_offset) against `h`.
Result<std::vector<DbEntry>> decode_db_directory(const Header& h, std::span<const std::byte> bytes);

// Parses slot `index` (exactly h.slot_size bytes). For an inline slot the CRC
// is verified here; for a heap slot call verify_heap_record once the bytes at
// heap_ref are in hand. `expected_db` is the DB the directory assigns to the slot.
Result<SlotView> decode_slot(const Header& h, uint64_t index, uint32_t expected_db,
                             std::span<const std::byte> bytes);

// Verifies the CRC of a heap slot over its heap bytes (key then payload,
// exactly data_len bytes) and fills in its key and payload views.
Status verify_heap_record(uint64_t index, std::span<const std::byte> slot_bytes, SlotView& v,
                          std::span<const std::byte> heap_bytes);

// Parses the scripts region (scripts_size bytes at scripts_offset) against
// `h`: its CRC, then every entry. Copies what it returns out of `bytes`.
Result<Scripts> decode_scripts(const Header& h, std::span<const std::byte> bytes);

}  // namespace rrs::table

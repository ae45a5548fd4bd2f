// A check of a request's serialized bytes for 32-bit integer fields that arrived wider.
//
// Protobuf's C++ parser reads every varint as up to 64 bits and truncates it to the field's
// width without a word: an int32 batch_size sent as 2^40 + 5 is parsed as 5, a limit_train of
// 2^35 as 0 ("all the data"). Nothing that looks at the parsed message can tell, so the daemon
// runs this on the bytes before parsing them (server/checked_request.h) and refuses such a
// request instead of running something the client never asked for.
//
// Pure functions; thread-safe.
#ifndef TRAIND_COMMON_WIRE_CHECK_H_
#define TRAIND_COMMON_WIRE_CHECK_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace traind {

// Walks `wire`, protobuf wire format of a message of type `descriptor`, and checks every varint
// of a field typed int32, enum, uint32, sint32 or bool (singular, repeated or packed, in
// sub-messages and groups at any depth) against what protobuf will keep of it:
//   int32, enum  -2^31 .. 2^31 - 1: a non-negative value as itself, a negative one as the
//                10-byte sign extension every protobuf writer produces (so 0xFFFFFFFF sent in
//                5 bytes, which the parser would turn into -1, is refused);
//   uint32       0 .. 2^32 - 1;
//   sint32       its zigzag encoding 0 .. 2^32 - 1;
//   bool         0 or 1.
// Fields of other types, fields sent with another wire type than their own (protobuf keeps
// those as unknown fields) and unknown fields are skipped, though their bytes must be well
// formed.
//
// INVALID_ARGUMENT naming the field by its path in the message, indices of repeated fields
// included: "spec.configs[2].batch_size: must fit in an int32 (-2147483648 to 2147483647), got
// 1099511627781". INVALID_ARGUMENT "not a valid trainer.v1.SubmitJobRequest: ..." for bytes
// that are not protobuf wire format (the parser would refuse them as well) or that nest more
// than 100 messages deep (protobuf's default recursion limit).
absl::Status CheckVarintWidths(const google::protobuf::Descriptor& descriptor,
                               absl::string_view wire);

}  // namespace traind

#endif  // TRAIND_COMMON_WIRE_CHECK_H_

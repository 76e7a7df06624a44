// The JSON reader decides whether a stage's --json output is "exactly one JSON object" (for the
// conformance suite) and reads reports back (for the compare tool): it must accept every valid
// report and reject anything more or less.
#include <gtest/gtest.h>

#include <string>

#include "common/json_reader.hpp"

using sixways::Json;
using sixways::JsonError;
using sixways::parse_json;

TEST(JsonReader, ReadsAReportShapedObject) {
    const Json json = parse_json(
        " {\"stage\": \"01_blocking\", \"ok\": 20, \"wall_s\": 1.5e-3, \"latency_ms\": {\"p50\": -0.25},"
        " \"errors\": {}, \"list\": [true, false, null, \"a\\\"b\\n\"]}\n");
    ASSERT_EQ(json.type, Json::Type::object);
    EXPECT_EQ(json.keys.size(), 6u);
    EXPECT_EQ(json.find("stage")->string, "01_blocking");
    EXPECT_EQ(json.find("ok")->number, 20);
    EXPECT_DOUBLE_EQ(json.find("wall_s")->number, 0.0015);
    EXPECT_DOUBLE_EQ(json.find("latency_ms")->find("p50")->number, -0.25);
    EXPECT_TRUE(json.find("errors")->keys.empty());
    const Json* list = json.find("list");
    ASSERT_EQ(list->items.size(), 4u);
    EXPECT_TRUE(list->items[0].boolean);
    EXPECT_EQ(list->items[2].type, Json::Type::null);
    EXPECT_EQ(list->items[3].string, "a\"b\n");
    EXPECT_EQ(json.find("missing"), nullptr);
}

TEST(JsonReader, RejectsAnythingButExactlyOneValue) {
    for (const char* text : {"", "   ", "{} {}", "{}x", "{\"a\": 1,}", "{\"a\" 1}", "{'a': 1}", "[1 2]",
                             "01", "1.", "-", "\"unterminated", "{\"a\": tru}", "\"tab\there\""}) {
        EXPECT_THROW(parse_json(text), JsonError) << text;
    }
}

TEST(JsonReader, AcceptsUtf8AndRejectsStringsThatAreNotUtf8) {
    EXPECT_EQ(parse_json("\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"").string,
              "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
    // Latin-1, a stray continuation byte, a byte never used, an overlong '/', a surrogate, past
    // U+10FFFF, a sequence cut short by the closing quote.
    for (const char* text : {"\"caf\xE9\"", "\"\x80\"", "\"\xFF\xFE\"", "\"\xC0\xAF\"", "\"\xED\xA0\x80\"",
                             "\"\xF4\x90\x80\x80\"", "\"\xE2\x82\""}) {
        EXPECT_THROW(parse_json(text), JsonError) << text;
    }
}

// A trace file is input like any other: nesting deep enough to exhaust the stack of a recursive
// reader is an error, while anything the project writes (a few levels) stays far below the limit.
TEST(JsonReader, RejectsNestingDeeperThanTheLimitWithoutExhaustingTheStack) {
    std::string arrays(100000, '[');
    std::string objects;
    for (int i = 0; i < 100000; ++i) {
        objects += "{\"a\":";
    }
    for (const std::string& text : {arrays, objects}) {
        try {
            parse_json(text);
            ADD_FAILURE() << "no JsonError";
        } catch (const JsonError& error) {
            EXPECT_NE(std::string(error.what()).find("nested deeper than"), std::string::npos)
                << error.what();
        }
    }
}

TEST(JsonReader, AcceptsNestingUpToTheLimit) {
    const std::size_t depth = sixways::json_max_depth;
    const Json deepest = parse_json(std::string(depth, '[') + std::string(depth, ']'));
    EXPECT_EQ(deepest.items.size(), 1u);
    EXPECT_THROW(parse_json(std::string(depth + 1, '[') + std::string(depth + 1, ']')), JsonError);
}

#include "common/json_reader.hpp"

#include <cctype>
#include <cstdlib>

#include "common/utf8.hpp"

namespace sixways {

const Json* Json::find(std::string_view key) const {
    if (type != Type::object) return nullptr;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        if (keys[i] == key) return &items[i];
    }
    return nullptr;
}

const Json& Json::at(std::string_view key) const {
    if (const Json* value = find(key)) return *value;
    throw JsonError("no member \"" + std::string(key) + "\"");
}

namespace {

// A recursive-descent reader: one function per rule of the grammar.
class Reader {
public:
    explicit Reader(std::string_view text) : text_(text) {}

    Json document() {
        Json value = this->value();
        skip_whitespace();
        if (at_ < text_.size()) fail("unexpected text after the value");
        return value;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw JsonError("at offset " + std::to_string(at_) + ": " + what);
    }

    void skip_whitespace() {
        while (at_ < text_.size() &&
               (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
            ++at_;
        }
    }

    char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }

    void expect(char c) {
        skip_whitespace();
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++at_;
    }

    void literal(std::string_view word) {
        if (text_.substr(at_, word.size()) != word) fail("expected " + std::string(word));
        at_ += word.size();
    }

    Json value() {
        skip_whitespace();
        Json json;
        switch (peek()) {
        case '{': enter(); object(json); --depth_; break;
        case '[': enter(); array(json); --depth_; break;
        case '"': json.type = Json::Type::string; json.string = string(); break;
        case 't': literal("true"); json.type = Json::Type::boolean; json.boolean = true; break;
        case 'f': literal("false"); json.type = Json::Type::boolean; break;
        case 'n': literal("null"); break;
        default: json.type = Json::Type::number; json.number = number(); break;
        }
        return json;
    }

    // Opens an array or object one level deeper (value() closes it): each level is a recursion.
    void enter() {
        if (depth_ == json_max_depth) {
            fail("nested deeper than " + std::to_string(json_max_depth) + " levels");
        }
        ++depth_;
    }

    void object(Json& json) {
        json.type = Json::Type::object;
        expect('{');
        skip_whitespace();
        if (peek() == '}') { ++at_; return; }
        for (;;) {
            skip_whitespace();
            if (peek() != '"') fail("expected a key");
            json.keys.push_back(string());
            expect(':');
            json.items.push_back(value());
            skip_whitespace();
            if (peek() == '}') { ++at_; return; }
            expect(',');
        }
    }

    void array(Json& json) {
        json.type = Json::Type::array;
        expect('[');
        skip_whitespace();
        if (peek() == ']') { ++at_; return; }
        for (;;) {
            json.items.push_back(value());
            skip_whitespace();
            if (peek() == ']') { ++at_; return; }
            expect(',');
        }
    }

    // Escapes are checked, not decoded beyond what a report needs: \uXXXX keeps its text.
    std::string string() {
        ++at_;  // the opening quote
        std::string out;
        for (;;) {
            if (at_ >= text_.size()) fail("unterminated string");
            const char c = text_[at_];
            if (static_cast<unsigned char>(c) >= 0x80) {
                // JSON text is UTF-8 (RFC 8259 8.1): a byte that is not part of it is an error.
                const std::size_t length = utf8_sequence_length(text_.substr(at_));
                if (length == 0) fail("a string is not valid UTF-8");
                out += text_.substr(at_, length);
                at_ += length;
                continue;
            }
            ++at_;
            if (c == '"') return out;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
            if (c != '\\') { out += c; continue; }
            if (at_ >= text_.size()) fail("unterminated escape");
            const char e = text_[at_++];
            switch (e) {
            case '"': case '\\': case '/': out += e; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'u':
                for (int i = 0; i < 4; ++i) {
                    if (at_ + static_cast<std::size_t>(i) >= text_.size() ||
                        !std::isxdigit(static_cast<unsigned char>(text_[at_ + static_cast<std::size_t>(i)]))) {
                        fail("bad \\u escape");
                    }
                }
                out += "\\u";
                out += text_.substr(at_, 4);
                at_ += 4;
                break;
            default: fail("bad escape");
            }
        }
    }

    // -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
    double number() {
        const std::size_t begin = at_;
        auto digits = [&] {
            const std::size_t first = at_;
            while (std::isdigit(static_cast<unsigned char>(peek()))) ++at_;
            if (at_ == first) fail("expected a digit");
        };
        if (peek() == '-') ++at_;
        if (peek() == '0') {
            ++at_;
        } else {
            digits();
        }
        if (peek() == '.') { ++at_; digits(); }
        if (peek() == 'e' || peek() == 'E') {
            ++at_;
            if (peek() == '+' || peek() == '-') ++at_;
            digits();
        }
        return std::strtod(std::string(text_.substr(begin, at_ - begin)).c_str(), nullptr);
    }

    std::string_view text_;
    std::size_t at_ = 0;
    int depth_ = 0;  // the arrays and objects open at at_
};

}  // namespace

Json parse_json(std::string_view text) { return Reader(text).document(); }

}  // namespace sixways

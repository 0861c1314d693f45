# frozen_string_literal: true

# Checks the Ruby client against the API's OpenAPI document: every field it reads from an answer
# exists in that answer's schema, and a field it reads as always there is one the schema
# requires. Run by tests/fast/openapi.rs with the document the orchestrator serves, so a server
# change that breaks the client fails the test suite:
#
#     ruby workers/ruby/test/contract_check.rb path/to/openapi.json
#
# Prints nothing and exits 0 when the client agrees with the document; otherwise prints each
# disagreement and exits 1. The Python and TypeScript clients need no such check (they are
# generated from the document); this one works over
# RubyVM::AbstractSyntaxTree:
# - A record type (`Task = Record.struct(:id, ...)`, lib/tasker/client/*.rb) reads each member
#   as `object["id"]`, nil when missing: each must exist in its schema. Its schema is the one of
#   its name (SCHEMA_OF for the others), or for a record inside another (`records: { children:
#   TaskChild }`) the schema of the field it is read from; a field the document gives as a
#   free-form object (a step's `wait`) has nothing to check.
# - A type with its own `from_json(object)` reads `object.fetch("x")` as always there and
#   `object["x"]` as maybe missing.
# - lib/tasker/client.rb and the parts of Client in lib/tasker/client/*.rb (Client::Operations)
#   read `@http.get(route).fetch("x")` as always there in every success answer the document
#   gives that route, and `Type.from_json(@http.post(route))` must be one of those answers'
#   types (`POST /v1/operations` answers an OperationCount (200) or an Operation (201)).
# Not a test file (the suite runs test/**/*_test.rb): it needs the document.

require "json"

LIB = File.expand_path("../lib/tasker", __dir__)

# Answer types named otherwise in the document.
SCHEMA_OF = { "PurgeResult" => "Purged", "Backfill" => "Backfilled" }.freeze

# What the client reads: each type's fields (name => read as always there), the record types of
# its fields, and the answers client.rb reads in place.
class ClientReads
  Reader = Struct.new(:name, :fields, :records, keyword_init: true)

  attr_reader :readers, :answers

  def initialize
    @readers = {}
    @answers = []
    parts = Dir[File.join(LIB, "client", "*.rb")].sort.map { |file| parse(file) }
    parts.each { |part| each_node(part) { |n| reader(n) } }
    client = [parse(File.join(LIB, "client.rb")), *parts]
    @routes = {}
    client.each { |part| each_node(part) { |n| route_builder(n) } }
    client.each { |part| each_node(part) { |n, method| answer(n, method) } }
  end

  private

  def parse(file)
    RubyVM::AbstractSyntaxTree.parse(File.read(file))
  end

  # Yields each node under +node+ with the name of the method it is in.
  def each_node(node, method = nil, &block)
    return unless node.is_a?(RubyVM::AbstractSyntaxTree::Node)

    method = node.children[0] if node.type == :DEFN
    yield node, method
    node.children.each { |child| each_node(child, method, &block) }
  end

  # `Name = Record.struct(:a, :b, records: { a: Other }, ...)`, or `Name = Struct.new(...) do
  # def self.from_json(object) ... end end`.
  def reader(node)
    return unless node.type == :CDECL

    name, value = node.children
    call, body = value.type == :ITER ? value.children : [value, nil]
    return unless call.type == :CALL

    receiver, method, args = call.children
    if receiver.type == :CONST && receiver.children[0] == :Record && method == :struct
      members = items(args).select { |a| a.type == :LIT }.map { |a| a.children[0].to_s }
      options = items(args).find { |a| a.type == :HASH }
      records = pairs(options).fetch(:records, nil)
      @readers[name.to_s] = Reader.new(name: "#{name}.from_json", fields: members.to_h { |m| [m, false] },
                                       records: pairs(records).to_h { |f, c| [f.to_s, c.children[0].to_s] })
    elsif (from_json = body && find(body) { |n| n.type == :DEFS && n.children[1] == :from_json })
      scope = from_json.children[2]
      @readers[name.to_s] = Reader.new(name: "#{name}.from_json", fields: reads(scope, scope.children[0][0]),
                                       records: {})
    end
  end

  # The fields `object.fetch("x")` (always there) and `object["x"]` read in +scope+.
  def reads(scope, object)
    fields = {}
    each_node(scope) do |n|
      next unless n.type == :CALL && n.children[0].type == :LVAR && n.children[0].children[0] == object

      field = string(items(n.children[2]).first)
      case n.children[1]
      when :fetch then fields[field] = true
      when :[] then fields[field] ||= false
      end
    end
    fields
  end

  # A private method of client.rb that only builds a route (`schedule_path`).
  def route_builder(node)
    return unless node.type == :DEFN

    body = node.children[1].children[2]
    @routes[node.children[0]] = body if body&.type == :FCALL
  end

  # `@http.get(route).fetch("x")` and `Type.from_json(@http.get(route))` in client.rb.
  def answer(node, method)
    return unless node.type == :CALL

    receiver, name, args = node.children
    if name == :fetch && (route = http_route(receiver))
      @answers << { reader: "Client##{method} (#{route})", route: route, field: string(items(args).first) }
    elsif name == :from_json && receiver.type == :CONST && (route = http_route(items(args).first))
      @answers << { reader: "Client##{method} (#{route})", route: route, type: receiver.children[0].to_s }
    end
  end

  # "GET /v1/tasks/{}/history" for `@http.get(path("v1", "tasks", id, "history"), ...)`; nil
  # for a route it does not spell out (one in a variable).
  def http_route(node)
    return unless node&.type == :CALL && node.children[0].type == :IVAR && node.children[0].children[0] == :@http

    path = route(items(node.children[2]).first)
    "#{node.children[1].to_s.upcase} #{path}" if path
  end

  # A path as the client builds it: a literal, `path(...)` (each argument not a literal a
  # parameter, `{}`), a route builder's, or a string of them.
  def route(node)
    case node&.type
    when :STR then node.children[0]
    when :DSTR then node.children[0] + node.children[1..].map { |part| route(part) || "{}" }.join
    when :EVSTR then route(node.children[0])
    when :LIST then items(node).map { |part| route(part) || "{}" }.join
    when :FCALL
      name, args = node.children
      return items(args).map { |s| "/#{s.type == :STR ? s.children[0] : '{}'}" }.join if name == :path

      route(@routes[name]) if @routes.key?(name)
    end
  end

  def items(list)
    list.nil? ? [] : list.children.compact
  end

  # A HASH literal's pairs, keyed by symbol.
  def pairs(hash)
    return {} if hash.nil? || hash.children[0].nil?

    items(hash.children[0]).each_slice(2).to_h { |key, value| [key.children[0], value] }
  end

  def string(node)
    node.children[0] if node&.type == :STR
  end

  def find(node, &block)
    each_node(node) { |n| return n if block.call(n) }
    nil
  end
end

# The document's schemas, and the disagreements the client's reads have with them.
class Contract
  attr_reader :problems

  def initialize(doc, client)
    @doc = doc
    @schemas = doc.fetch("components").fetch("schemas")
    @client = client
    @problems = []
    @checked = 0
  end

  def run
    @client.readers.each_key { |type| check_reader(type) }
    @client.answers.each { |a| check_answer(a) }
    @problems << "only #{@checked} answer readers found in #{LIB}" if @checked < 20
    self
  end

  private

  def check_reader(type)
    reader = @client.readers.fetch(type)
    schema = schema_of(type)
    return if schema.nil?

    reader.fields.sort.each { |field, always| check_field(reader.name, schema, field, always) }
    @checked += 1
  end

  def check_answer(answer)
    schemas = answer_schemas(answer[:route])
    if schemas.empty?
      @problems << "#{answer[:reader]}: the document describes no JSON answer of it"
    elsif answer[:field]
      schemas.each { |schema| check_field(answer[:reader], schema, answer[:field], true) }
      @checked += 1
    elsif !schemas.include?(type = schema_of(answer[:type]))
      @problems << "#{answer[:reader]} reads #{answer[:type]} (#{type || 'no schema'}); " \
                   "the document answers #{schemas.join(' or ')}"
    end
  end

  def check_field(reader, schema, field, always)
    branches = variants(@schemas.fetch(schema))
    if branches.none? { |b| b.fetch("properties", {}).key?(field) }
      @problems << "#{reader} reads #{field.inspect}, which #{schema} does not have"
    elsif always && !branches.all? { |b| b.fetch("required", []).include?(field) }
      @problems << "#{reader} reads #{field.inspect} as always there; #{schema} does not require it"
    end
  end

  # The object shapes a schema allows: itself, or each branch of a tagged union (`oneOf` of
  # inline objects, as AlertSink's): a field is there if a branch has it, always there if
  # every branch requires it.
  def variants(schema)
    branches = schema["oneOf"] || schema["anyOf"]
    return [schema] unless branches&.all? { |b| b.key?("properties") }

    branches
  end

  # The schema +type+ is read with, nil for a free-form object. A record inside another is read
  # from that one's field.
  def schema_of(type)
    parent, reader = @client.readers.find { |_, r| r.records.value?(type) }
    return object_schema(@schemas.dig(schema_of(parent), "properties", reader.records.key(type))) if parent

    name = SCHEMA_OF.fetch(type, type)
    return name if @schemas.key?(name)

    @problems << "#{type}.from_json: no schema #{name.inspect} in the document"
    nil
  end

  # The schema name a field refers to: directly, or-null, or as the items of an array.
  def object_schema(property)
    return nil if property.nil?
    return property["$ref"].split("/").last if property["$ref"]
    return object_schema(property["items"]) if property["items"]

    (property["oneOf"] || property["anyOf"] || []).each { |branch| return branch["$ref"].split("/").last if branch["$ref"] }
    nil
  end

  # The names of the schemas of the success answers of "METHOD /path/{}".
  def answer_schemas(route)
    method, path = route.split(" ", 2)
    _, item = @doc.fetch("paths").find { |p, _| p.gsub(/\{[^}]*\}/, "{}") == path }
    (item&.dig(method.downcase, "responses") || {}).filter_map do |status, answer|
      ref = answer.dig("content", "application/json", "schema", "$ref")
      ref.split("/").last if status.start_with?("2") && ref
    end
  end
end

if ARGV.size != 1
  warn "usage: ruby contract_check.rb path/to/openapi.json"
  exit 2
end
problems = Contract.new(JSON.parse(File.read(ARGV[0])), ClientReads.new).run.problems
puts problems.uniq
exit(problems.empty? ? 0 : 1)

# frozen_string_literal: true

require_relative "client_support"

# The audit log's call (Client#audit) against the stand-in of client_support.rb: the filters it
# sends in the query and the page it reads back (the security suite,
# tests/slow/security/audit.rs, checks the rows a real orchestrator writes).
class ClientAuditWireTest < Minitest::Test
  Client = Tasker::Client
  StandIn = ClientWire::StandIn

  TASK_ID = "019a0000-0000-7000-8000-0000000000a1"
  ENTRY = {
    "id" => 42, "at" => "2026-11-27T10:02:03.123456Z", "token_id" => 7, "token_name" => "ci",
    "method" => "POST", "route" => "/v1/tasks/{id}/cancel", "status" => 200, "peer" => "10.0.0.5",
    "namespaces" => ["shop"], "task_id" => TASK_ID, "target" => {}
  }.freeze
  # A refusal without a token: the optional fields absent.
  REFUSED = {
    "id" => 41, "at" => "2026-11-27T10:02:02Z", "method" => "DELETE", "route" => "/v1/tokens/{name}",
    "status" => 401, "namespaces" => [], "target" => { "token" => "ci" }
  }.freeze

  def test_the_audit_call_sends_its_filters_and_reads_a_page
    api = StandIn.new(
      "GET /v1/audit" => [
        [200, { "entries" => [ENTRY, REFUSED], "next_before" => 41 }],
        [200, { "entries" => [], "next_before" => nil }],
        [403, { "error" => { "code" => "forbidden", "message" => "this needs admin" } }]
      ]
    )
    client = Client.new(url: api.url)

    page = client.audit(namespace: "shop", token: "ci", route: "/v1/tasks/{id}/cancel", method: "POST",
                        since: Time.new(2026, 11, 27, 11, 0, 0, "+01:00"), until: "2026-11-28T00:00:00Z", limit: 2)
    assert_equal 41, page.next_before
    entry = page.entries.first
    assert_equal [42, 7, "ci", "POST", "/v1/tasks/{id}/cancel", 200, "10.0.0.5", nil, ["shop"], TASK_ID, {}],
                 [entry.id, entry.token_id, entry.token_name, entry.method, entry.route, entry.status, entry.peer,
                  entry.forwarded_for, entry.namespaces, entry.task_id, entry.target]
    assert_equal Time.utc(2026, 11, 27, 10, 2, 3.123456r), entry.at
    refused = page.entries.last
    assert_equal [nil, nil, nil, nil, 401, { "token" => "ci" }],
                 [refused.token_id, refused.token_name, refused.peer, refused.task_id, refused.status, refused.target]
    assert_empty client.audit(before: page.next_before).entries
    error = assert_raises(Client::AuthError) { client.audit }
    assert_equal [403, "forbidden"], [error.status, error.code]

    assert_equal [
      ["GET", "/v1/audit?namespace=shop&token=ci&route=%2Fv1%2Ftasks%2F%7Bid%7D%2Fcancel&method=POST&limit=2" \
              "&since=2026-11-27T10%3A00%3A00.000000Z&until=2026-11-28T00%3A00%3A00Z", nil],
      ["GET", "/v1/audit?before=41", nil],
      ["GET", "/v1/audit", nil]
    ], api.requests
  ensure
    client&.close
    api&.stop
  end
end

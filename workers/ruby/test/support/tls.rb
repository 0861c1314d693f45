# frozen_string_literal: true

require "openssl"

module TestSupport
  # A throwaway CA and a server certificate it signs for 127.0.0.1 and localhost, written as PEM
  # files into a folder: ca.pem, server.pem and server.key (PKCS#8).
  module Tls
    # Writes them into +dir+; returns their paths by name (:ca, :cert, :key).
    def self.write(dir)
      ca_key = OpenSSL::PKey::EC.generate("prime256v1")
      ca = certificate("/CN=Tasker Ruby test CA", ca_key, ca_key, nil,
                       [["basicConstraints", "CA:TRUE", true], ["keyUsage", "keyCertSign,cRLSign", true]])
      key = OpenSSL::PKey::EC.generate("prime256v1")
      cert = certificate("/CN=localhost", key, ca_key, ca,
                         [["basicConstraints", "CA:FALSE", true], ["keyUsage", "digitalSignature", true],
                          ["extendedKeyUsage", "serverAuth", false],
                          ["subjectAltName", "DNS:localhost,IP:127.0.0.1", false]])
      paths = { ca: File.join(dir, "ca.pem"), cert: File.join(dir, "server.pem"), key: File.join(dir, "server.key") }
      File.write(paths[:ca], ca.to_pem)
      File.write(paths[:cert], cert.to_pem)
      File.write(paths[:key], key.private_to_pem)
      paths
    end

    # A certificate of +subject+ for +key+, signed by +issuer_key+ (self-signed when +issuer+ is
    # nil), valid for a day.
    def self.certificate(subject, key, issuer_key, issuer, extensions)
      cert = OpenSSL::X509::Certificate.new
      cert.version = 2
      cert.serial = OpenSSL::BN.rand(64)
      cert.subject = OpenSSL::X509::Name.parse(subject)
      cert.issuer = issuer ? issuer.subject : cert.subject
      cert.public_key = key
      cert.not_before = Time.now - 60
      cert.not_after = Time.now + 86_400
      factory = OpenSSL::X509::ExtensionFactory.new
      factory.subject_certificate = cert
      factory.issuer_certificate = issuer || cert
      extensions.each { |name, value, critical| cert.add_extension(factory.create_extension(name, value, critical)) }
      cert.sign(issuer_key, OpenSSL::Digest.new("SHA256"))
      cert
    end
  end
end

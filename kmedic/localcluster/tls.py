"""A throwaway certificate authority for a secured local cluster: one CA, one certificate per
broker and the controller (named for 127.0.0.1 and localhost), and client certificates, all PEM.

Keys are unencrypted PKCS#8, the form the Java client reads from a PEM keystore
(``ssl.keystore.type=PEM``) as well as librdkafka and Python's ``ssl``. The files live in the
cluster's work directory and are written owner-readable only; they protect a test cluster on
loopback, nothing more.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 30


@dataclass(frozen=True)
class IssuedPair:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class LocalCa:
    """The CA's certificate (what clients trust) and the key that signs the others."""

    cert: Path
    key: Path

    @classmethod
    def create(cls, directory: Path, name: str = "kmedic local CA") -> LocalCa:
        directory.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = _now()
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        ca = cls(directory / "ca.pem", directory / "ca-key.pem")
        _write(ca.cert, cert.public_bytes(serialization.Encoding.PEM))
        _write(ca.key, _pkcs8(key))
        return ca

    def issue(self, directory: Path, name: str, *, server: bool) -> IssuedPair:
        """A certificate for ``name`` signed by this CA: for a server (a broker: valid for
        127.0.0.1 and localhost) or for a client (mutual TLS)."""
        ca_key = serialization.load_pem_private_key(self.key.read_bytes(), password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        ca_cert = x509.load_pem_x509_certificate(self.cert.read_bytes())
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if server:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        directory.mkdir(parents=True, exist_ok=True)
        pair = IssuedPair(directory / f"{name}.pem", directory / f"{name}-key.pem")
        _write(pair.cert, cert.public_bytes(serialization.Encoding.PEM))
        _write(pair.key, _pkcs8(key))
        return pair


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _pkcs8(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)

use super::*;

fn identity() -> SlaveIdentity {
    SlaveIdentity {
        cluster_name: "DefaultCluster".into(),
        broker_name: "broker-a".into(),
        broker_id: 1,
    }
}

#[test]
fn hello_round_trips_and_is_never_an_offset_report() {
    let bytes = identity().encode().unwrap();
    let hello = encode_hello(&bytes).unwrap();
    assert!(i64::from_be_bytes(hello[..8].try_into().unwrap()) < 0);
    for cut in 0..hello.len() {
        assert_eq!(decode_hello(&hello[..cut]), Ok(None), "cut at {cut}");
    }
    let decoded = decode_hello(&hello).unwrap().unwrap();
    assert_eq!(decoded.identity, identity());
    assert_eq!(decoded.identity_bytes, &bytes[..]);
    assert_eq!(decoded.len, hello.len());
}

#[test]
fn bad_hellos_are_named() {
    let mut classic = [0u8; HELLO_HEAD_LEN];
    classic[..8].copy_from_slice(&4096i64.to_be_bytes());
    assert_eq!(
        decode_hello_head(&classic),
        Err(HandshakeError::ClassicReport(4096))
    );
    let mut v2 = [0u8; HELLO_HEAD_LEN];
    v2[..8].copy_from_slice(&HANDSHAKE_MAGIC);
    v2[7] = 2;
    assert_eq!(
        decode_hello_head(&v2),
        Err(HandshakeError::UnsupportedVersion(2))
    );
    let mut long = [0u8; HELLO_HEAD_LEN];
    long[..8].copy_from_slice(&HANDSHAKE_MAGIC);
    long[8..].copy_from_slice(&1025u16.to_be_bytes());
    assert_eq!(
        decode_hello_head(&long),
        Err(HandshakeError::IdentityTooLong(1025))
    );
    let mut trailing = identity().encode().unwrap();
    trailing.push(0);
    assert!(SlaveIdentity::decode(&trailing).is_err());
    let huge = SlaveIdentity {
        broker_name: "b".repeat(2000),
        ..identity()
    };
    assert_eq!(huge.encode(), Err(HandshakeError::IdentityTooLong(2026)));
}

#[test]
fn admission_checks_group_and_id() {
    assert_eq!(admit(&identity(), "DefaultCluster", "broker-a"), Ok(()));
    assert!(matches!(
        admit(&identity(), "Other", "broker-a"),
        Err(HandshakeError::WrongCluster { .. })
    ));
    assert!(matches!(
        admit(&identity(), "DefaultCluster", "broker-b"),
        Err(HandshakeError::WrongBrokerName { .. })
    ));
    let master = SlaveIdentity {
        broker_id: 0,
        ..identity()
    };
    assert_eq!(
        admit(&master, "DefaultCluster", "broker-a"),
        Err(HandshakeError::NotASlaveId(0))
    );
}

#[test]
fn proofs_bind_secret_nonce_and_identity() {
    let id = identity().encode().unwrap();
    let nonce = [7u8; NONCE_LEN];
    let p = proof(b"s3cret", &nonce, &id);
    assert_eq!(verify_proof(b"s3cret", &nonce, &id, &p), Ok(()));
    assert!(verify_proof(b"other", &nonce, &id, &p).is_err());
    assert!(verify_proof(b"s3cret", &[8u8; NONCE_LEN], &id, &p).is_err());
    assert!(verify_proof(b"s3cret", &nonce, b"someone else", &p).is_err());
    assert!(verify_proof(b"s3cret", &nonce, &id, &p[..31]).is_err());
    assert_eq!(decode_challenge_len(0), Ok(0));
    assert_eq!(decode_challenge_len(32), Ok(32));
    assert!(decode_challenge_len(8).is_err());
    assert_eq!(encode_challenge(Some(&nonce)).len(), 1 + NONCE_LEN);
    assert_eq!(encode_challenge(None), vec![0]);
}

#[test]
fn frame_headers_are_bounded() {
    let h = encode_frame_header(65536, 100);
    assert_eq!(
        decode_frame_header(&h),
        Ok(FrameHeader {
            offset: 65536,
            size: 100
        })
    );
    let mut bad = h;
    bad[8..].copy_from_slice(&(-1i32).to_be_bytes());
    assert_eq!(decode_frame_header(&bad), Err(FrameError::BadSize(-1)));
    let big = encode_frame_header(0, MAX_FRAME_BODY + 1);
    assert!(decode_frame_header(&big).is_err());
    let neg = encode_frame_header(-5, 0);
    assert_eq!(
        decode_frame_header(&neg),
        Err(FrameError::NegativeOffset(-5))
    );
}

#[test]
fn decoders_survive_arbitrary_bytes() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    for _ in 0..20_000 {
        let len = rng.gen_range(0..64);
        let mut buf: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if rng.gen_bool(0.5) && buf.len() >= HELLO_HEAD_LEN {
            buf[..8].copy_from_slice(&HANDSHAKE_MAGIC);
            buf[8] = 0;
            buf[9] = rng.gen_range(0..60);
        }
        let _ = decode_hello(&buf);
        let _ = SlaveIdentity::decode(&buf);
        if let Some(h) = buf.first_chunk::<FRAME_HEADER_LEN>() {
            let _ = decode_frame_header(h);
        }
    }
}

#[test]
fn version_3_frames_carry_the_confirm_offset() {
    let h = v2::encode_confirmed_frame_header(4096, 10, 2048);
    assert_eq!(
        v2::decode_confirmed_frame_header(&h),
        Ok((
            FrameHeader {
                offset: 4096,
                size: 10
            },
            2048
        ))
    );
    let max = v2::encode_confirmed_frame_header(0, 0, i64::MAX);
    assert_eq!(
        v2::decode_confirmed_frame_header(&max).map(|(_, c)| c),
        Ok(i64::MAX)
    );
    let mut neg = h;
    neg[FRAME_HEADER_LEN..].copy_from_slice(&(-1i64).to_be_bytes());
    assert_eq!(
        v2::decode_confirmed_frame_header(&neg),
        Err(FrameError::NegativeOffset(-1))
    );
}

#[test]
fn a_controller_mode_master_takes_versions_2_and_3_only() {
    assert_eq!(
        check_magic_versions(&v2::HANDSHAKE_MAGIC_V3, &[2, 3]),
        Ok(3)
    );
    assert_eq!(
        check_magic_versions(&v2::HANDSHAKE_MAGIC_V2, &[2, 3]),
        Ok(2)
    );
    assert_eq!(
        check_magic_versions(&HANDSHAKE_MAGIC, &[2, 3]),
        Err(HandshakeError::UnsupportedVersion(1))
    );
    assert_eq!(
        check_magic_version(&v2::HANDSHAKE_MAGIC_V3, 2),
        Err(HandshakeError::UnsupportedVersion(3)),
        "a version 2 master refuses a version 3 slave, which then dials with version 2"
    );
}

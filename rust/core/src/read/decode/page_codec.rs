//! Page decompression with codecs kept per thread.
//!
//! The parquet crate makes a codec for every column chunk it reads, and its Zstandard
//! codec makes a compression context and a decompression context each time. Making a
//! Zstandard context asks the CPU whether it has BMI2 (`cpuid`), which a hypervisor may
//! trap: on a virtual machine, reading one row of each of 2,000 small files spent a fifth
//! of its time making contexts. A thread here keeps one codec of each kind it meets, and
//! one Zstandard decompression context. Snappy needs no context; its pages are
//! decompressed here so that they can be written into reused buffers
//! ([`crate::read::decode::page_buffers`]).

use std::cell::RefCell;

use parquet::basic::Compression;
use parquet::compression::{create_codec, Codec, CodecOptionsBuilder};
use parquet::errors::{ParquetError, Result};
use zstd::zstd_safe::{self, DCtx, InBuffer, OutBuffer, ResetDirective};

use crate::read::page_guard::{most_uncompressed, MAX_PAGE_BYTES};

thread_local! {
    /// Codecs of the compressions met so far on this thread.
    static CODECS: RefCell<Vec<(Compression, Box<dyn Codec>)>> = const { RefCell::new(Vec::new()) };
    /// This thread's Zstandard decompression context, made at its first page.
    static ZSTD: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

/// `body` decompressed with `codec` into `size` bytes (a page header's declared size,
/// which the page guard has bounded).
pub(crate) fn decompressed(codec: Compression, body: &[u8], size: usize) -> Result<Vec<u8>> {
    CODECS.with(|codecs| {
        let mut codecs = codecs.borrow_mut();
        let i = match codecs.iter().position(|(c, _)| *c == codec) {
            Some(i) => i,
            None => {
                let made = create_codec(codec, &CodecOptionsBuilder::default().build())?
                    .ok_or_else(|| ParquetError::General(format!("no codec for {codec:?}")))?;
                codecs.push((codec, made));
                codecs.len() - 1
            }
        };
        let mut out = Vec::with_capacity(size);
        codecs[i].1.decompress(body, &mut out, Some(size))?;
        if out.len() != size {
            return Err(ParquetError::General(format!(
                "a page of {size} bytes decompressed to {}",
                out.len()
            )));
        }
        Ok(out)
    })
}

/// Append the Zstandard frames of `body` to `out`, decompressed. The size comes from the
/// frames themselves (a frame may not declare it), and may not pass what `body` can hold
/// nor [`MAX_PAGE_BYTES`], whatever a frame declares: the bounds the page guard sets on a
/// page header's declared size. `expected` is room made first for frames that do not
/// declare their size (parquet-java's), so that most pages need no second allocation.
pub(crate) fn zstd_into(body: &[u8], out: &mut Vec<u8>, expected: usize) -> Result<()> {
    ZSTD.with(|slot| {
        let mut slot = slot.borrow_mut();
        let dctx = slot.get_or_insert_with(DCtx::create);
        // A context left mid-frame by an error is reset here, before its next page.
        let failed = |code: usize| {
            ParquetError::General(format!(
                "corrupt Zstandard page: {}",
                zstd_safe::get_error_name(code)
            ))
        };
        dctx.reset(ResetDirective::SessionOnly).map_err(failed)?;
        let most = page_limit(Compression::ZSTD(Default::default()), body.len());
        let limit = out.len().saturating_add(most);
        let mut input = InBuffer::around(body);
        while input.pos() < body.len() {
            match zstd_safe::get_frame_content_size(&body[input.pos()..]) {
                Ok(Some(size)) => {
                    let size = usize::try_from(size).unwrap_or(usize::MAX);
                    if size > limit - out.len() {
                        return Err(too_large());
                    }
                    out.reserve_exact(size);
                }
                _ if input.pos() == 0 => out.reserve_exact(expected.min(limit - out.len())),
                _ => {}
            }
            loop {
                if out.len() == out.capacity() {
                    if out.len() >= limit {
                        return Err(too_large());
                    }
                    let grow = body.len().max(out.len()).max(4096);
                    out.reserve_exact(grow.min(limit - out.len()));
                }
                let (read, written) = (input.pos(), out.len());
                // The stream sets the vector's length to what it has written.
                let hint = dctx
                    .decompress_stream(&mut OutBuffer::around_pos(&mut *out, written), &mut input);
                match hint {
                    Err(code) => return Err(failed(code)),
                    Ok(0) => break,
                    Ok(_) if input.pos() == read && out.len() == written => {
                        if out.len() < out.capacity() {
                            return Err(ParquetError::General(
                                "corrupt Zstandard page: a frame cut short".into(),
                            ));
                        }
                    }
                    Ok(_) => {}
                }
            }
        }
        Ok(())
    })
}

/// Fill all of `out` with the start of what the Zstandard frames of `body` decompress
/// to, decompressing no further.
pub(crate) fn zstd_prefix(body: &[u8], out: &mut [u8]) -> Result<()> {
    ZSTD.with(|slot| {
        let mut slot = slot.borrow_mut();
        let dctx = slot.get_or_insert_with(DCtx::create);
        let failed = |why: &str| ParquetError::General(format!("corrupt Zstandard page: {why}"));
        dctx.reset(ResetDirective::SessionOnly)
            .map_err(|code| failed(zstd_safe::get_error_name(code)))?;
        let want = out.len();
        let mut input = InBuffer::around(body);
        let mut output = OutBuffer::around(out);
        while output.pos() < want {
            let (read, written) = (input.pos(), output.pos());
            dctx.decompress_stream(&mut output, &mut input)
                .map_err(|code| failed(zstd_safe::get_error_name(code)))?;
            if input.pos() == read && output.pos() == written {
                return Err(failed("the frames end before the bytes wanted"));
            }
        }
        Ok(())
    })
}

/// The size the Zstandard frame `body` declares it decompresses to, if it declares one
/// and holds no other frame.
pub(crate) fn zstd_declared(body: &[u8]) -> Option<usize> {
    let size = zstd_safe::get_frame_content_size(body).ok()??;
    let frame = zstd_safe::find_frame_compressed_size(body).ok()?;
    (frame == body.len())
        .then(|| usize::try_from(size).ok())
        .flatten()
}

/// The size a raw Snappy `body` declares it decompresses to, refused where it passes what
/// `body` can hold or [`MAX_PAGE_BYTES`]: the page guard's bounds on a page header.
pub(crate) fn snappy_len(body: &[u8]) -> Result<usize> {
    snappy_declared(body, body.len())
}

/// [`snappy_len`] of a body of `whole` bytes of which only the start `head` is at hand.
pub(crate) fn snappy_declared(head: &[u8], whole: usize) -> Result<usize> {
    let size = snap::raw::decompress_len(head)
        .map_err(|e| ParquetError::General(format!("corrupt Snappy page: {e}")))?;
    if size > page_limit(Compression::SNAPPY, whole) {
        return Err(ParquetError::General(format!(
            "a Snappy page declares {size} bytes, more than its {whole} bytes can hold or a \
             page may take ({MAX_PAGE_BYTES} bytes)"
        )));
    }
    Ok(size)
}

/// Decompress the raw Snappy `body` into all of `out`, which [`snappy_len`] sized.
pub(crate) fn snappy_into(body: &[u8], out: &mut [u8]) -> Result<()> {
    let written = snap::raw::Decoder::new()
        .decompress(body, out)
        .map_err(|e| ParquetError::General(format!("corrupt Snappy page: {e}")))?;
    if written != out.len() {
        return Err(ParquetError::General(format!(
            "corrupt Snappy page: {written} bytes written of {}",
            out.len()
        )));
    }
    Ok(())
}

/// Most bytes a page of `compressed` bytes of `codec` may decompress to: what its bytes
/// can hold, and at most [`MAX_PAGE_BYTES`] (the page guard's bounds on a header).
pub(crate) fn page_limit(codec: Compression, compressed: usize) -> usize {
    let compressed = i64::try_from(compressed).unwrap_or(i64::MAX);
    let most = most_uncompressed(codec, compressed).unwrap_or(i64::MAX);
    usize::try_from(most.min(MAX_PAGE_BYTES)).unwrap_or(0)
}

fn too_large() -> ParquetError {
    ParquetError::General(format!(
        "a Zstandard page decompresses to more than its bytes can hold or a page may take \
         ({MAX_PAGE_BYTES} bytes)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(data: &[u8], with_size: bool) -> Vec<u8> {
        let mut cctx = zstd_safe::CCtx::create();
        cctx.set_parameter(zstd_safe::CParameter::ContentSizeFlag(with_size))
            .unwrap();
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(data.len()));
        if with_size {
            cctx.compress2(&mut out, data).unwrap();
        } else {
            // Streamed, so that the frame cannot know its size.
            let mut input = InBuffer::around(data);
            let mut output = OutBuffer::around(&mut out);
            cctx.compress_stream2(
                &mut output,
                &mut input,
                zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_end,
            )
            .unwrap();
        }
        out
    }

    #[test]
    fn frames_with_and_without_their_size_decompress_after_a_prefix() {
        let data: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i % 7).to_le_bytes())
            .collect();
        for with_size in [true, false] {
            let body = frame(&data, with_size);
            let declared = zstd_safe::get_frame_content_size(&body).unwrap();
            assert_eq!(declared.is_some(), with_size);
            let mut out = b"levels".to_vec();
            zstd_into(&body, &mut out, 1000).unwrap();
            assert_eq!(&out[..6], b"levels");
            assert_eq!(&out[6..], &data[..], "with_size {with_size}");
        }
        // Two frames in one page, as some writers cut a long page.
        let mut body = frame(&data[..1000], true);
        body.extend(frame(&data[1000..], false));
        let mut out = Vec::new();
        zstd_into(&body, &mut out, 1000).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn the_start_of_frames_decompresses_alone() {
        let data: Vec<u8> = (0..300_000u32)
            .flat_map(|i| (i / 3).to_le_bytes())
            .collect();
        for with_size in [true, false] {
            let body = frame(&data, with_size);
            for n in [0, 1, 4096, 131_072, 131_073, data.len()] {
                let mut out = vec![0xaa; n];
                zstd_prefix(&body, &mut out).unwrap();
                assert_eq!(out, data[..n], "{n} with_size {with_size}");
            }
            // More than the frames hold, and a cut frame, are errors; the context
            // recovers after.
            assert!(zstd_prefix(&body, &mut vec![0; data.len() + 1]).is_err());
            assert!(zstd_prefix(&body[..body.len() / 3], &mut vec![0; data.len()]).is_err());
            let mut out = vec![0; 10];
            zstd_prefix(&body, &mut out).unwrap();
            assert_eq!(out, data[..10]);
        }
        // The start of a second frame.
        let mut body = frame(&data[..1000], true);
        body.extend(frame(&data[1000..], false));
        let mut out = vec![0; 5000];
        zstd_prefix(&body, &mut out).unwrap();
        assert_eq!(out, data[..5000]);
    }

    #[test]
    fn damaged_frames_are_errors_and_the_context_recovers() {
        let data = vec![7u8; 100_000];
        let body = frame(&data, false);
        let cut = &body[..body.len() - 3];
        assert!(zstd_into(cut, &mut Vec::new(), 0).is_err());
        assert!(zstd_into(b"not a zstandard frame", &mut Vec::new(), 0).is_err());
        let mut out = Vec::new();
        zstd_into(&body, &mut out, 1000).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn snappy_pages_decompress_and_damaged_ones_are_errors() {
        let data: Vec<u8> = (0..200_000u32)
            .flat_map(|i| (i % 13).to_le_bytes())
            .collect();
        let body = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        let size = snappy_len(&body).unwrap();
        assert_eq!(size, data.len());
        let mut out = vec![0xff; size];
        snappy_into(&body, &mut out).unwrap();
        assert_eq!(out, data);

        // Cut short: the copy or literal it ends in reaches past the input.
        let cut = &body[..body.len() / 2];
        let err = snappy_into(cut, &mut vec![0; size]).unwrap_err();
        assert!(err.to_string().contains("corrupt Snappy page"), "{err}");
        // Room for more than the stream writes.
        assert!(snappy_into(&body, &mut vec![0; size + 1]).is_err());
        // A preamble declaring 1 GiB, and 100 kB from ten bytes: more than they can hold.
        for declared in [1u64 << 30, 100_000] {
            let mut hostile = Vec::new();
            let mut v = declared;
            while v >= 0x80 {
                hostile.push((v as u8) | 0x80);
                v >>= 7;
            }
            hostile.push(v as u8);
            hostile.resize(10, 0);
            let err = snappy_len(&hostile).unwrap_err();
            assert!(err.to_string().contains("more than"), "{err}");
        }
        assert!(snappy_len(&[0xff; 12]).is_err());
    }

    #[test]
    fn a_frame_declaring_more_than_a_page_may_hold_is_refused() {
        // Frame headers declaring 1 TiB, and 128 MiB (under the page cap, but more than
        // their few bytes can hold), their content never given.
        for declared in [1u64 << 40, 1 << 27] {
            let mut cctx = zstd_safe::CCtx::create();
            cctx.set_pledged_src_size(Some(declared)).unwrap();
            let mut out = Vec::with_capacity(64);
            let mut output = OutBuffer::around(&mut out);
            let mut input = InBuffer::around(b"x");
            cctx.compress_stream2(
                &mut output,
                &mut input,
                zstd_safe::zstd_sys::ZSTD_EndDirective::ZSTD_e_flush,
            )
            .unwrap();
            let size = zstd_safe::get_frame_content_size(&out).ok();
            assert_eq!(size, Some(Some(declared)));
            let err = zstd_into(&out, &mut Vec::new(), 1 << 30).unwrap_err();
            assert!(err.to_string().contains("more than"), "{err}");
        }
    }
}

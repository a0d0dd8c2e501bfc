//! Just enough PNG to read Chromium's screenshots (8-bit RGB or RGBA, not
//! interlaced: what Skia writes) and base64 to unwrap them from the
//! protocol, over flate2, which the suites already use; neither a `png` nor
//! a `base64` crate joins the workspace for a test.

use std::io::Read;

/// A decoded image: `width * height` pixels, row by row, as RGB.
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<[u8; 3]>,
}

impl Image {
    /// Decodes an 8-bit, non-interlaced RGB or RGBA PNG (alpha dropped:
    /// Chromium's screenshots are opaque).
    pub fn decode(bytes: &[u8]) -> Result<Image, String> {
        let body = bytes.strip_prefix(b"\x89PNG\r\n\x1a\n").ok_or("not a PNG: no signature")?;
        let (mut header, mut data, mut at) = (None, Vec::new(), 0);
        while at + 8 <= body.len() {
            let length = u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]) as usize;
            let kind = &body[at + 4..at + 8];
            let content = body.get(at + 8..at + 8 + length).ok_or("PNG: a chunk runs past the end")?;
            match kind {
                b"IHDR" => header = Some(content.to_vec()),
                b"IDAT" => data.extend_from_slice(content),
                b"IEND" => break,
                _ => {}
            }
            at += 12 + length;
        }
        let header = header.ok_or("PNG: no IHDR")?;
        if header.len() != 13 {
            return Err("PNG: IHDR is not 13 bytes".to_owned());
        }
        let width = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let height = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
        let channels = match (header[8], header[9], header[12]) {
            (8, 2, 0) => 3,
            (8, 6, 0) => 4,
            (depth, colour, interlace) => {
                return Err(format!(
                    "PNG: depth {depth}, colour type {colour}, interlace {interlace} unsupported"
                ));
            }
        };
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(&data[..])
            .read_to_end(&mut raw)
            .map_err(|error| format!("PNG: image data: {error}"))?;
        let stride = width as usize * channels;
        if raw.len() != (stride + 1) * height as usize {
            return Err(format!("PNG: {} bytes of image data for {width}x{height}", raw.len()));
        }
        let mut pixels = Vec::with_capacity(width as usize * height as usize);
        let mut previous = vec![0_u8; stride];
        for row in raw.chunks_exact(stride + 1) {
            let mut line = row[1..].to_vec();
            unfilter(row[0], &mut line, &previous, channels)?;
            pixels.extend(line.chunks_exact(channels).map(|pixel| [pixel[0], pixel[1], pixel[2]]));
            previous = line;
        }
        Ok(Image { width, height, pixels })
    }

    /// Every `stride`-th pixel of every `stride`-th row, sorted by colour:
    /// what [`Image::background`] and [`Image::colours`] count on (a sample,
    /// as the suites run unoptimized and a screenshot has millions).
    fn sample(&self, stride: usize) -> Vec<u32> {
        let width = self.width as usize;
        let mut sample: Vec<u32> = self
            .pixels
            .chunks(width.max(1))
            .step_by(stride)
            .flat_map(|row| row.iter().step_by(stride))
            .map(|&[red, green, blue]| u32::from_be_bytes([0, red, green, blue]))
            .collect();
        sample.sort_unstable();
        sample
    }

    /// The colour most pixels have (the page's background), and the share
    /// of pixels in percent that have another.
    pub fn background(&self) -> ([u8; 3], u32) {
        let sample = self.sample(3);
        let (mut best, mut best_count, mut at) = (0, 0, 0);
        while at < sample.len() {
            let run = sample[at..].iter().take_while(|&&colour| colour == sample[at]).count();
            if run > best_count {
                (best, best_count) = (sample[at], run);
            }
            at += run;
        }
        let [_, red, green, blue] = best.to_be_bytes();
        let other = (sample.len() - best_count) * 100 / sample.len().max(1);
        ([red, green, blue], other as u32)
    }

    /// How many different colours a sample of the image has.
    pub fn colours(&self) -> usize {
        let mut sample = self.sample(3);
        sample.dedup();
        sample.len()
    }

    /// Mean brightness of each `block` x `block` square, row by row: what
    /// two renderings are compared on, since text drawn by another font
    /// version moves pixels without moving the page's layout.
    pub fn block_means(&self, block: u32) -> Vec<u8> {
        let (columns, rows) = (self.width.div_ceil(block), self.height.div_ceil(block));
        let mut sums = vec![(0_u64, 0_u64); (columns * rows) as usize];
        for (index, pixel) in self.pixels.iter().enumerate() {
            let (x, y) = (index as u32 % self.width, index as u32 / self.width);
            let cell = &mut sums[((y / block) * columns + x / block) as usize];
            cell.0 += u64::from(pixel[0]) + u64::from(pixel[1]) + u64::from(pixel[2]);
            cell.1 += 3;
        }
        sums.into_iter().map(|(sum, count)| (sum / count.max(1)) as u8).collect()
    }
}

fn unfilter(filter: u8, line: &mut [u8], previous: &[u8], channels: usize) -> Result<(), String> {
    for i in 0..line.len() {
        let left = if i >= channels { line[i - channels] } else { 0 };
        let up = previous[i];
        let up_left = if i >= channels { previous[i - channels] } else { 0 };
        let predicted = match filter {
            0 => 0,
            1 => left,
            2 => up,
            3 => ((u16::from(left) + u16::from(up)) / 2) as u8,
            4 => paeth(left, up, up_left),
            other => return Err(format!("PNG: unknown row filter {other}")),
        };
        line[i] = line[i].wrapping_add(predicted);
    }
    Ok(())
}

fn paeth(left: u8, up: u8, up_left: u8) -> u8 {
    let estimate = i16::from(left) + i16::from(up) - i16::from(up_left);
    let (to_left, to_up, to_up_left) = (
        (estimate - i16::from(left)).abs(),
        (estimate - i16::from(up)).abs(),
        (estimate - i16::from(up_left)).abs(),
    );
    if to_left <= to_up && to_left <= to_up_left {
        left
    } else if to_up <= to_up_left {
        up
    } else {
        up_left
    }
}

/// Decodes standard base64 with padding (what the protocol sends).
pub fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(text.len() / 4 * 3);
    let (mut bits, mut held) = (0_u32, 0_u32);
    for (at, character) in text.bytes().enumerate() {
        let value = match character {
            b'A'..=b'Z' => character - b'A',
            b'a'..=b'z' => character - b'a' + 26,
            b'0'..=b'9' => character - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            other => return Err(format!("base64: byte {other} at {at}")),
        };
        // At most 7 bits wait from before, so 13 bits hold all that matters.
        bits = ((bits << 6) | u32::from(value)) & 0x1FFF;
        held += 6;
        if held >= 8 {
            held -= 8;
            bytes.push((bits >> held) as u8);
        }
    }
    Ok(bytes)
}

import { PDFDocument, StandardFonts } from "pdf-lib";

/** A heading set in a larger type, placed close above what follows it, as a word processor would. */
export interface PdfHeading {
  heading: string;
  size: number;
}

/** A PDF whose pages hold the given paragraphs (11 pt, wrapped to the page) and headings. */
export async function buildPdf(pages: (string | PdfHeading)[][]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  const bold = await pdf.embedFont(StandardFonts.HelveticaBold);
  for (const paragraphs of pages) {
    const page = pdf.addPage([595, 842]);
    let y = 790;
    for (const paragraph of paragraphs) {
      if (typeof paragraph !== "string") {
        page.drawText(paragraph.heading, { x: 50, y, size: paragraph.size, font: bold });
        // Less than a blank line below: only the type's size sets it apart.
        y -= paragraph.size * 1.3;
        continue;
      }
      let line = "";
      const lines: string[] = [];
      for (const word of paragraph.split(" ")) {
        const next = line ? `${line} ${word}` : word;
        if (font.widthOfTextAtSize(next, 11) > 495) {
          lines.push(line);
          line = word;
        } else {
          line = next;
        }
      }
      if (line) lines.push(line);
      for (const each of lines) {
        page.drawText(each, { x: 50, y, size: 11, font });
        y -= 14;
      }
      y -= 14;
    }
  }
  return pdf.save();
}

import { PDFDocument, StandardFonts } from "pdf-lib";

/** A PDF whose pages hold the given paragraphs, wrapped to the page as a word processor would. */
export async function buildPdf(pages: string[][]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const paragraphs of pages) {
    const page = pdf.addPage([595, 842]);
    let y = 790;
    for (const text of paragraphs) {
      let line = "";
      const lines: string[] = [];
      for (const word of text.split(" ")) {
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
